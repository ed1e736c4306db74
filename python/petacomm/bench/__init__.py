"""Benchmarks: commands that print figures with units, comparing strategies side by side."""
