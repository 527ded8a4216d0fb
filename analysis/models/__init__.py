"""Performance models over a run's tables: the I/O-aware stage model (iomodel), per-resource
bottlenecks (bottleneck), and cloud cost (cost). Equations and what is fitted from what: docs/models.md."""
