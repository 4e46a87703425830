"""The lakehouse project's Python side: runtime setup, sample data, verification and CLIs."""
