"""Time within and around Spark's tasks (docs/findings.md: `shuffle-wait`, `unattributed-time`, `idle-cores`,
`driver-time`): where a stage's task time went besides the CPU, how much of the executors' cores the tasks used, and
the time the driver spent outside any task."""
from __future__ import annotations
