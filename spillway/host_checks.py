"""Preflight of a cluster's hosts before provisioning: one read-only playbook run, one summary table.

playbooks/preflight.yml checks every host (reachable, root or working become, Java, /proc/diskstats, storage
paths are what the inventory says, free space, ports, clock skew; docs/cluster.md, "Preflight") and writes its
rows {host, check, status: ok|FAIL|warn, detail, fix} as JSON; this module runs it, prints the table and says
whether provisioning may start. A bench does not start when a row says FAIL.
"""
import json
import tempfile
from pathlib import Path

from run_layout import LOGS, writing
from spillway import INVENTORIES
from spillway.ansible import first_message, run_playbook

REPORT_NAME = "preflight.json"
STATUS_ORDER = {"FAIL": 0, "warn": 1, "ok": 2}


def _inventory_path(inventory):
    """An Inventory (spillway.inventory.load), an inventory folder, or a cluster name."""
    if hasattr(inventory, "path"):
        return Path(inventory.path)
    path = Path(inventory)
    return path if path.is_absolute() or path.is_dir() else INVENTORIES / str(inventory)


def run_checks(inventory, run_dir=None, extra_vars=None):
    """Run the preflight playbook; return (rows, log path). A run that produced no rows gives one FAIL row."""
    path = _inventory_path(inventory).resolve()
    folder = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="spillway-preflight-"))
    report = folder / REPORT_NAME
    report.unlink(missing_ok=True)
    result = run_playbook(str(path), "preflight.yml", {**(extra_vars or {}), "preflight_report": str(report)},
                          folder / LOGS / "preflight.log")
    if report.is_file():
        return json.loads(report.read_text()), result.log_path
    rows = [{"host": "-", "check": "playbook", "status": "FAIL", "detail": first_message(result.failures),
             "fix": f"read {result.log_path}"}]
    writing.write_text(report, json.dumps(rows, indent=2) + "\n")
    return rows, result.log_path


def summary_table(rows):
    """Host x check matrix of statuses, then each FAIL and warn row with its detail and fix."""
    hosts = list(dict.fromkeys(row["host"] for row in rows))
    checks = list(dict.fromkeys(row["check"] for row in rows))
    status = {(row["host"], row["check"]): row["status"] for row in rows}
    header = ["host"] + checks
    table = [header] + [[host] + [status.get((host, check), "-") for check in checks] for host in hosts]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table]
    problems = sorted((row for row in rows if row["status"] != "ok"), key=lambda row: STATUS_ORDER[row["status"]])
    for row in problems:
        lines.append(f"{row['status']:<4}  {row['host']}  {row['check']}: {row['detail']}")
        if row.get("fix"):
            lines.append(f"      fix: {row['fix']}")
    return "\n".join(lines)


def check_hosts(inventory, run_dir=None, extra_vars=None):
    """Check every host of `inventory`; print the summary table; (True when no row says FAIL, the rows).

    With run_dir, writes <run_dir>/preflight.json and logs to <run_dir>/logs/preflight.log. extra_vars go to the
    playbook (e.g. the bench's spillway_monitoring override, which moves ports).
    """
    rows, log_path = run_checks(inventory, run_dir, extra_vars)
    ok = not any(row["status"] == "FAIL" for row in rows)
    name = getattr(inventory, "name", None) or _inventory_path(inventory).name
    print(f"preflight of cluster '{name}': {'ok' if ok else 'FAILED'} (log: {log_path})", flush=True)
    print(summary_table(rows), flush=True)
    return ok, rows
