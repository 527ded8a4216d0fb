"""The shape of a stage's tasks (docs/findings.md: `skew`, `partition-sizing`, `failed-tasks`): which bytes are
skewed and where, whether the partitions are sized for the cores and the blocks, and failures that make a run
unfit for comparison."""
from __future__ import annotations
