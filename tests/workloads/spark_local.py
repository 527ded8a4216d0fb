"""Workload Spark jobs for real, in Spark local mode: built by the same spark-build-job the cluster uses and
started like the cluster's spark-submit wrapper starts its driver, without YARN. For tests of job code."""
import json
import os
import subprocess
from pathlib import Path

from spillway.inventory import role_default
from spillway.versions import spark_releases

REPO = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(os.environ.get("SPARK_HOME", "/opt/spillway/spark-3.5.6"))
HADOOP_HOME = Path(os.environ.get("HADOOP_HOME", "/opt/spillway/hadoop-3.4.2"))
# The build tool the spark role installs as {spillway_root}/bin/spark-build-job; its template is plain bash.
BUILD_SCRIPT = REPO / "playbooks" / "roles" / "spark" / "templates" / "spark-build-job.j2"



def spark_release(home: Path):
    """The Spark release of an install, from its spark-core jar's name (spark-core_2.13-4.2.0.jar -> 4.2.0)."""
    jars = sorted((home / "jars").glob("spark-core_*.jar"))
    return jars[0].stem.rsplit("-", 1)[1] if jars else None


# What the cluster's Spark JVMs get for Java 17 (role spark, and the release's own from role common's
# spark_releases: spark-submit's launcher, which adds them, is absent). SPARK_HOME picks the release.
SPARK_JAVA17_OPTIONS = role_default("spark", "spark_java17_options") + (
    spark_releases().get(spark_release(SPARK_HOME), {}).get("java_options", []))

# Job-code tests run for seconds: the client compiler alone, as the emulated inventories' workloads do
# (spillway_jvm.jit: c1, docs/cluster.md "The workloads' JVMs"), at about 60 % of the CPU.
TEST_JVM_OPTIONS = ["-XX:TieredStopAtLevel=1"]


def spark_jars_present(*prefixes: str) -> bool:
    return all(list((SPARK_HOME / "jars").glob(f"{prefix}_*.jar")) for prefix in prefixes)


def compile_jar(source_dir: Path, jar: Path, main_class: str) -> Path:
    """Compile the Java sources of `source_dir` into `jar` with the cluster's build tool; return the jar's path as the
    tool prints it. javac and jar run for seconds too: the client compiler alone (JAVA_TOOL_OPTIONS, which every JVM
    reads), about half their CPU."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT), str(source_dir), str(jar), main_class],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAVA_TOOL_OPTIONS": " ".join(TEST_JVM_OPTIONS)})
    assert result.returncode == 0, f"build failed:\n{result.stderr[-3000:]}"
    return Path(result.stdout.strip())


def build_job(workload: str, jar: Path, main_class: str) -> Path:
    """Compile workloads/<workload>/spark/src into `jar` (compile_jar)."""
    return compile_jar(REPO / "workloads" / workload / "spark" / "src", jar, main_class)


def submit(work: Path, jar: Path, *args, conf=(), classpath=(), timeout=600):
    """SparkSubmit in local[2] mode with scratch space under `work`; returns the CompletedProcess."""
    options = ["--conf", f"spark.local.dir={work}/spark-local", "--conf", "spark.ui.enabled=false"]
    for item in conf:
        options += ["--conf", item]
    return subprocess.run(
        ["java", "-Xmx1g", *TEST_JVM_OPTIONS, *SPARK_JAVA17_OPTIONS, "-cp", ":".join([f"{SPARK_HOME}/jars/*", *map(str, classpath)]),
         "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]", *options, str(jar), *map(str, args)],
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}, capture_output=True, text=True, timeout=timeout)


def summary(result) -> dict:
    """The job's JSON summary: its last line on stdout (every workload job prints one)."""
    lines = result.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("{"), \
        f"no JSON summary on stdout:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return json.loads(lines[-1])


def run_job(work: Path, jar: Path, *args, conf=(), timeout=300) -> dict:
    """Submits the job (see submit), asserts that it ended well and returns its JSON summary."""
    result = submit(work, jar, *args, conf=conf, timeout=timeout)
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return summary(result)
