"""How the workloads used their devices (docs/findings.md: `task-throughput`, `small-requests`, `random-access`,
`read-write-mix`): per-task throughput against what the device can do, the sizes and order of the requests the
block trace recorded, and whether a workload reads or writes."""
from __future__ import annotations
