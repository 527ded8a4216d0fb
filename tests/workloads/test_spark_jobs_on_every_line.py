"""Every workload's Spark job and the stage marker listener compile, with the build's -Werror, against each Spark
release the default cluster installs beyond its default line (the default line's are built and run by each
workload's own local-mode tests): one javac over all the sources, against the install's jars. A release the
inventory lists but this machine lacks fails: `make setup` installs it."""
import subprocess
from pathlib import Path

import pytest

from spillway import inventory, versions

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted([*REPO.glob("workloads/*/spark/src/**/*.java"),
                  *(REPO / "playbooks/roles/spark/files/stage-markers/src").rglob("*.java")])
# the flags of spark-build-job (playbooks/roles/spark/templates/spark-build-job.j2)
JAVAC_FLAGS = ["--release", "17", "-Xlint:all,-path,-serial,-processing", "-Werror", "-encoding", "UTF-8"]
OTHER_LINES = versions.installed(inventory.load("local"))["spark"][1:]


def test_the_default_cluster_installs_a_spark_4_beside_its_default_line():
    assert [versions.line(v) for v in OTHER_LINES if v.startswith("4.")], OTHER_LINES


@pytest.mark.parametrize("release", OTHER_LINES)
def test_every_spark_job_compiles_against_the_release(release, tmp_path):
    jars = Path(f"/opt/spillway/spark-{release}/jars")
    assert list(jars.glob(f"spark-core_*-{release}.jar")), f"Spark {release} is not installed in {jars}: make setup"
    assert {p.parts[len(REPO.parts) + 1] for p in SOURCES if p.parts[len(REPO.parts)] == "workloads"} >= {
        "terasort", "tpch", "kmeans", "sort", "wordcount", "websql"}
    result = subprocess.run(["javac", *JAVAC_FLAGS, "-cp", f"{jars}/*", "-d", str(tmp_path), *map(str, SOURCES)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "spillway" / "monitoring" / "StageMarkerListener.class").is_file()
