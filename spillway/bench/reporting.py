"""The bench's last step: the tables and the report of its run directory, built by the analysis in a process of
its own (`python -m analysis report`; the harness imports no analysis), its output in logs/report.log."""
import subprocess
import sys
import time

from run_layout import LOGS, REPORT, writing
from spillway import REPO
from spillway.console import indent, say
from spillway.run_record import utc_now


def build_report(run, line, rebuild_tables):
    """The report of `run` as a step with progress line `line`; its path, or None when it failed (said). A resumed
    run's tables were built before some of its workload runs: `rebuild_tables` parses raw/ again."""
    say(f"{line} ...")
    start, started_at = time.monotonic(), utc_now()
    proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(run.path),
                           *(["--rebuild-tables"] if rebuild_tables else [])], cwd=REPO,
                          capture_output=True, text=True)
    writing.write_text(run.path / LOGS / "report.log", proc.stdout + proc.stderr, run.path)
    took = time.monotonic() - start
    # Recorded after the fact, not with run.step(): the report reads the manifest and would otherwise list its own
    # step as still running.
    run.manifest["steps"].append({"name": "report", "status": "ok" if proc.returncode == 0 else "failed",
                                  "started_at": started_at, "ended_at": utc_now(),
                                  "duration_s": round(took, 3), "log": "logs/report.log"})
    run.save()
    if proc.returncode != 0:
        say(f"{line}: FAILED ({took:.1f} s)\n{indent(proc.stderr.strip()[-2000:])}")
        return None
    say(f"{line}: ok ({took:.1f} s)")
    return run.path / REPORT
