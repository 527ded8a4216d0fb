"""The eventlog collector around a real Spark application: `start`, a Spark job in local mode writing its event log
into $SPILLWAY_ROOT/spark-events (as the cluster's spark-defaults make every driver do), `stop`. What the job wrote
is copied into $SPILLWAY_OUT/eventlogs/ as Spark wrote it; an event log from before the window is not."""
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "workloads"))
from spark_local import build_job, submit, summary  # noqa: E402

COLLECTOR = REPO / "collectors" / "eventlog"
RECORDS = 2000  # TeraSort records of 100 bytes: a 10-byte key, 90 bytes of value


def collector(action, root, out):
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out), "SPILLWAY_RUN_ID": "run",
           "SPILLWAY_WORKLOAD_ID": "terasort"}
    result = subprocess.run([sys.executable, str(COLLECTOR / action)], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert not (out / "collector-error.txt").exists(), (out / "collector-error.txt").read_text()


def test_stop_copies_the_event_log_of_the_application_that_ran_in_the_window(tmp_path):
    root, out, work = tmp_path / "root", tmp_path / "out", tmp_path / "work"
    events = root / "spark-events"
    for folder in (events, out, work / "in"):
        folder.mkdir(parents=True)
    earlier = events / "application_1_0001"
    earlier.write_text('{"Event":"SparkListenerLogStart"}\n')
    os.utime(earlier, (time.time() - 3600, time.time() - 3600))
    rng = random.Random(7)
    (work / "in" / "part-m-00000").write_bytes(b"".join(rng.randbytes(10) + b"v" * 90 for _ in range(RECORDS)))
    jar = build_job("terasort", work / "build" / "job.jar", "spillway.terasort.TeraSortSpark")

    collector("start", root, out)
    result = submit(work, jar, "sort", f"file://{work}/in", f"file://{work}/out", "2",
                    conf=["spark.eventLog.enabled=true", f"spark.eventLog.dir=file://{events}"])
    assert summary(result)["records"] == RECORDS, result.stderr[-3000:]
    collector("stop", root, out)

    copied = sorted(p.name for p in (out / "eventlogs").iterdir())
    written = sorted(p.name for p in events.iterdir() if p != earlier)
    assert copied == written and len(written) == 1 and written[0].startswith("local-")
    lines = (out / "eventlogs" / written[0]).read_text().splitlines()
    assert json.loads(lines[0])["Event"] == "SparkListenerLogStart"
    assert json.loads(lines[-1])["Event"] == "SparkListenerApplicationEnd"
    assert any(json.loads(line)["Event"] == "SparkListenerTaskEnd" for line in lines)
    assert (out / "eventlogs" / written[0]).read_bytes() == (events / written[0]).read_bytes()
