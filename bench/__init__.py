"""Benchmarks: see bench/README.md."""
