"""Shared command-line plumbing: every CLI takes its --help text from its module docstring."""

from __future__ import annotations

import argparse


def parser_from_doc(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """First paragraph of `doc` as the description, the rest as the epilog."""
    summary, _, details = (doc or "").strip().partition("\n\n")
    return argparse.ArgumentParser(
        prog=prog,
        description=summary,
        epilog=details or None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
