"""Performance models over a run's tables: the I/O-aware stage model (iomodel, a package with one module per
concern) and per-resource bottlenecks (bottleneck), and what they predict on every placement (sensitivity).
Equations and what is fitted from what: docs/models.md."""
