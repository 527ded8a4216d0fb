"""What start and stop of the node-budget collector share: one snapshot of this node's budget groups
(docs/collectors.md, node-budget). Nothing runs in the background: the kernel's counters are cumulative, so two
snapshots bound the window. Reading the groups needs no privilege."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from spillway_collector import Context, NothingHere

# role node_budget's group names, at the top of a cgroup v1 hierarchy: nothing else is read
GROUP = re.compile(r"/sys/fs/cgroup/[a-z_,]+/spillway\.[A-Za-z0-9_.-]+")
MEMORY_FILES = ("usage_in_bytes", "limit_in_bytes", "max_usage_in_bytes", "failcnt")
CPU_FILES = ("cfs_quota_us", "cfs_period_us")


def budget_groups(root: Path) -> dict[str, Path]:
    """controller -> group of this node's budget, from role node_budget's listing; none: NothingHere."""
    listing = root / "run" / "node-cgroups"
    if not listing.exists():
        raise NothingHere(f"no {listing}: this node has no budget (spillway_node)")
    groups = {}
    for line in listing.read_text().split():
        if not GROUP.fullmatch(line):
            raise RuntimeError(f"{listing} names {line!r}, not a node budget's group")
        groups[Path(line).parent.name.split(",")[0]] = Path(line)
    return groups


def pairs(text: str) -> dict[str, int]:
    return {key: int(value) for key, value in (line.split() for line in text.splitlines() if line.strip())}


def snapshot(groups: dict[str, Path]) -> dict:
    taken = {"epoch": round(time.time(), 6), "groups": {name: str(path) for name, path in groups.items()}}
    if "memory" in groups:
        group = groups["memory"]
        taken["memory"] = {name: int((group / f"memory.{name}").read_text()) for name in MEMORY_FILES}
        taken["memory"]["stat"] = pairs((group / "memory.stat").read_text())
        taken["memory"]["oom_kill"] = pairs((group / "memory.oom_control").read_text()).get("oom_kill")
    if "cpu" in groups:
        group = groups["cpu"]
        taken["cpu"] = {name: int((group / f"cpu.{name}").read_text()) for name in CPU_FILES}
        taken["cpu"]["stat"] = pairs((group / "cpu.stat").read_text())
    return taken


def snapshot_to(ctx: Context, phase: str) -> None:
    """node-budget.<phase>; a snapshot already taken is kept, so a second stop changes nothing."""
    dest = ctx.out / f"node-budget.{phase}"
    if not dest.exists():
        dest.write_text(json.dumps(snapshot(budget_groups(ctx.root)), sort_keys=True) + "\n")
