"""Benchmarks that print figures (never timed tests): the harness itself on a real cluster, the HDD model against its
datasheet, and the analysis parsers' throughput."""
