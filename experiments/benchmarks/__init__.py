"""Benchmarks of the harness itself on a real cluster: they run benches and print figures (never timed tests)."""
