"""The Spark TeraSort job, for real, in Spark local mode on a small TeraGen input.

Flow: build the job jar, TeraGen (Hadoop local job runner) -> Spark sort -> Hadoop TeraValidate and the
job's own validate subcommand; then corrupted copies of the output must fail validate, each for the
reason that was planted.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from spark_local import HADOOP_HOME, SPARK_HOME, TEST_JVM_OPTIONS, build_job, spark_jars_present, submit, summary

EXAMPLES_JAR = HADOOP_HOME / "lib" / "hadoop-mapreduce-examples-3.4.2.jar"

ROWS = 100_000
SORT_PARTITIONS = 3
RECORD = 100  # bytes: 10-byte key + 90-byte value

pytestmark = pytest.mark.skipif(
    not spark_jars_present("spark-core") or not EXAMPLES_JAR.is_file(),
    reason=f"needs the Spark jars in {SPARK_HOME}/jars and {EXAMPLES_JAR}: run `make setup` first",
)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)


def hadoop_example(work: Path, *args):
    """Runs an examples-jar program (teragen, teravalidate) with the local job runner."""
    result = run([
        "java", *TEST_JVM_OPTIONS, "-cp", f"{HADOOP_HOME}/lib/*", "org.apache.hadoop.util.RunJar", str(EXAMPLES_JAR), args[0],
        "-Dmapreduce.framework.name=local", f"-Dhadoop.tmp.dir={work}/hadoop-tmp", *args[1:],
    ])
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stderr[-3000:]}"
    return result


def spark_job(work: Path, jar: Path, *args):
    """Runs the job jar in local mode; returns (exit code, its JSON summary)."""
    result = submit(work, jar, *args, timeout=300)
    return result.returncode, summary(result)


def build_jar(work: Path) -> Path:
    return build_job("terasort", work / "build" / "job.jar", "spillway.terasort.TeraSortSpark")


def uri(path: Path) -> str:
    return f"file://{path}"


@pytest.fixture(scope="module")
def sorted_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("terasort-spark")
    jar = build_jar(work)
    # Two TeraGen maps: two input files, so the sort reads more than one split.
    hadoop_example(work, "teragen", "-Dmapreduce.job.maps=2", str(ROWS), uri(work / "in"))
    code, summary = spark_job(work, jar, "sort", uri(work / "in"), uri(work / "out"), str(SORT_PARTITIONS))
    assert code == 0, summary
    return work, jar, summary


def part_files(directory: Path):
    return sorted(p for p in directory.iterdir() if p.name.startswith("part-"))


def corrupted_copy(work: Path, name: str) -> Path:
    copy = work / name
    shutil.copytree(work / "out", copy)
    return copy


def test_build_is_idempotent(sorted_run):
    work, jar, _ = sorted_run
    before = jar.stat().st_mtime_ns
    assert build_jar(work) == jar and jar.stat().st_mtime_ns == before


def test_sort_writes_every_record_in_the_requested_partitions(sorted_run):
    work, _, summary = sorted_run
    assert summary["records"] == ROWS
    assert summary["partitions"] == SORT_PARTITIONS
    parts = part_files(work / "out")
    assert len(parts) == SORT_PARTITIONS
    assert sum(p.stat().st_size for p in parts) == ROWS * RECORD
    assert (work / "out" / "_SUCCESS").exists()


def test_hadoop_teravalidate_accepts_the_output_and_agrees_on_the_checksum(sorted_run):
    work, jar, _ = sorted_run
    hadoop_example(work, "teravalidate", uri(work / "out"), uri(work / "report"))
    report = [line.split("\t") for line in (work / "report" / "part-r-00000").read_text().splitlines()]
    # TeraValidate's report holds only a checksum line when the output is good, "error" lines otherwise.
    assert [fields[0] for fields in report] == ["checksum"], report

    code, summary = spark_job(work, jar, "validate", uri(work / "out"), uri(work / "in"))
    assert code == 0, summary["problems"]
    assert summary["ok"] and summary["records"] == summary["input_records"] == ROWS
    assert summary["checksum"] == summary["input_checksum"] == report[0][1]


def test_validate_rejects_records_out_of_order(sorted_run):
    work, jar, _ = sorted_run
    out = corrupted_copy(work, "out-misordered")
    part = part_files(out)[1]
    data = bytearray(part.read_bytes())
    data[:RECORD], data[RECORD:2 * RECORD] = data[RECORD:2 * RECORD], data[:RECORD]
    part.write_bytes(bytes(data))
    (out / f".{part.name}.crc").unlink(missing_ok=True)  # else the local file system rejects the changed bytes

    code, summary = spark_job(work, jar, "validate", uri(out), uri(work / "in"))
    assert code == 1 and not summary["ok"]
    assert [Path(f).name for f in summary["unsorted_files"]] == [part.name]
    assert summary["misordered_pairs"] == 1
    assert summary["checksum"] == summary["input_checksum"]  # same records, only their order changed


def test_validate_rejects_altered_records_and_bad_partition_boundaries(sorted_run):
    work, jar, _ = sorted_run
    out = corrupted_copy(work, "out-altered")
    first, _, last = part_files(out)
    # Each file stays sorted, but the highest keys now come first: a boundary error.
    first_bytes, last_bytes = first.read_bytes(), last.read_bytes()
    first.write_bytes(last_bytes)
    last.write_bytes(first_bytes)
    # And one value byte of the middle file changes: only the checksum can see that.
    middle = part_files(out)[1]
    data = bytearray(middle.read_bytes())
    data[RECORD + 50] ^= 0xFF
    middle.write_bytes(bytes(data))
    for crc in out.glob(".*.crc"):
        crc.unlink()

    code, summary = spark_job(work, jar, "validate", uri(out), uri(work / "in"))
    assert code == 1 and not summary["ok"]
    assert summary["unsorted_files"] == []
    assert summary["records"] == ROWS
    problems = "\n".join(summary["problems"])
    assert "bad partition boundary" in problems
    assert "checksum differs" in problems
