"""Where an embedded session keeps its data: a location is a plain path or a URI, and Spark
gets each as it is meant (a path made absolute, a URI untouched)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse


def is_uri(location: str) -> bool:
    """True for `scheme://...` (kept exactly as given), false for a plain path."""
    return bool(urlparse(location).scheme) and "://" in location


def normalize(location: str | Path) -> str:
    """A plain path becomes absolute; a URI is returned unchanged."""
    text = str(location)
    if is_uri(text):
        return text
    return str(Path(text).resolve())
