"""Benchmarks that put numbers behind the project's settings (issue 7).

Each benchmark runs both sides of a comparison in one process, on the same data, repeats,
and writes JSON, a PNG plot and markdown lines to a results folder (see `scripts.bench.cli`).
"""
