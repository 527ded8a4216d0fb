"""GATK4 for real: synthetic data -> MarkDuplicatesSpark -> BaseRecalibratorSpark -> ApplyBQSRSpark in Spark
local mode, on the installed GATK classpath jar after Spark's jars (the order the cluster uses), then
validate.py; validation must pass on the real outputs and fail, for the planted reason, on a wrong expected
duplicate count and on an unsorted BAM.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from spark_local import REPO, SPARK_HOME, SPARK_JAVA17_OPTIONS, TEST_JVM_OPTIONS, spark_jars_present

WORKLOAD = REPO / "workloads" / "gatk4"
GATK_HOME = Path(os.environ.get("GATK_HOME", SPARK_HOME.parent / "gatk-4.6.2.0"))
GATK_CLASSPATH_JAR = GATK_HOME / "gatk-spark-classpath.jar"
# The workloads' venv (pysam) that runs generate.py and validate.py on the cluster.
WORKLOAD_PYTHON = Path(os.environ.get("SPILLWAY_WORKLOAD_PYTHON", "/opt/spillway/venv/bin/python"))

READ_PAIRS = 2000
DUPLICATE_RATE = 0.05

pytestmark = pytest.mark.skipif(
    not GATK_CLASSPATH_JAR.is_file() or not WORKLOAD_PYTHON.is_file()
    or not spark_jars_present("spark-core"),
    reason=f"needs GATK in {GATK_HOME} (role gatk_install), Spark in {SPARK_HOME} and {WORKLOAD_PYTHON}: "
           "run `make setup` first",
)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)


def generate(out: Path, seed: int) -> dict:
    result = run([str(WORKLOAD_PYTHON), str(WORKLOAD / "generate.py"), str(out), "--read-pairs", str(READ_PAIRS),
                  "--genome-size", "200000", "--duplicate-rate", str(DUPLICATE_RATE), "--seed", str(seed)])
    assert result.returncode == 0, result.stderr
    return json.loads((out / "expected.json").read_text())


def gatk(work: Path, tool: str, *args):
    result = run(
        ["java", "-Xmx1g", *TEST_JVM_OPTIONS, *SPARK_JAVA17_OPTIONS, "-cp", f"{SPARK_HOME}/jars/*:{GATK_CLASSPATH_JAR}",
         "org.broadinstitute.hellbender.Main", tool, *args, "--spark-master", "local[2]",
         "--conf", f"spark.local.dir={work}/spark-local", "--conf", "spark.ui.enabled=false",
         "--tmp-dir", str(work)],
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert result.returncode == 0, f"{tool} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def validate(work: Path, bam: Path, expected: Path):
    """validate.py as the step runs it (BAM on stdin); returns (exit code, verdict, stderr)."""
    verdict = work / f"validation-{bam.stem}-{expected.stem}.json"
    with bam.open("rb") as stream:
        result = subprocess.run(
            [str(WORKLOAD_PYTHON), str(WORKLOAD / "validate.py"), "--bam", "-",
             "--metrics", str(work / "md.metrics"), "--recal-table", str(work / "recal.table"),
             "--expected", str(expected), "--out", str(verdict)],
            stdin=stream, capture_output=True, text=True, timeout=120,
        )
    return result.returncode, json.loads(verdict.read_text()), result.stderr


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    work = tmp_path_factory.mktemp("gatk4")
    data = work / "data"
    expected = generate(data, seed=7)
    gatk(work, "MarkDuplicatesSpark", "-I", str(data / "reads.bam"), "-O", str(work / "md.bam"),
         "-M", str(work / "md.metrics"))
    gatk(work, "BaseRecalibratorSpark", "-I", str(work / "md.bam"), "-R", str(data / "reference.fasta"),
         "--known-sites", str(data / "known_sites.vcf.gz"), "-O", str(work / "recal.table"))
    gatk(work, "ApplyBQSRSpark", "-I", str(work / "md.bam"), "--bqsr-recal-file", str(work / "recal.table"),
         "-O", str(work / "final.bam"))
    return work, expected


def test_generator_plants_the_duplicates_it_reports_and_is_deterministic(tmp_path):
    first = generate(tmp_path / "a", seed=3)
    second = generate(tmp_path / "b", seed=3)
    assert first == second
    assert first["duplicate_pairs"] == round(READ_PAIRS * DUPLICATE_RATE)
    assert (tmp_path / "a" / "reads.bam").read_bytes() == (tmp_path / "b" / "reads.bam").read_bytes()
    assert generate(tmp_path / "c", seed=4)["known_sites"] == first["known_sites"]
    assert (tmp_path / "c" / "reads.bam").read_bytes() != (tmp_path / "a" / "reads.bam").read_bytes()


def test_validation_passes_on_the_real_outputs(pipeline):
    work, expected = pipeline
    code, verdict, stderr = validate(work, work / "final.bam", work / "data" / "expected.json")
    assert code == 0, stderr
    assert verdict["ok"]
    assert verdict["metrics_duplicate_reads"] == expected["duplicate_reads"] == 2 * round(READ_PAIRS * DUPLICATE_RATE)
    assert verdict["output_bam"]["duplicate_reads"] == expected["duplicate_reads"]
    assert verdict["output_bam"]["reads"] == 2 * READ_PAIRS
    assert verdict["recalibration_table_rows"]["RecalTable1"] > 0


def test_validation_fails_on_a_wrong_expected_duplicate_count(pipeline):
    work, expected = pipeline
    wrong = work / "expected-wrong.json"
    wrong.write_text(json.dumps({**expected, "duplicate_reads": expected["duplicate_reads"] + 2}))
    code, verdict, stderr = validate(work, work / "final.bam", wrong)
    assert code == 1
    assert not verdict["ok"]
    assert "the generator planted" in stderr
    assert len(verdict["problems"]) == 1


def test_validation_fails_on_an_unsorted_bam(pipeline):
    work, _ = pipeline
    unsorted = work / "unsorted.bam"
    # Same reads and header (still SO:coordinate), last read moved to the front.
    script = (
        "import pysam, sys\n"
        "with pysam.AlignmentFile(sys.argv[1]) as source:\n"
        "    reads = list(source)\n"
        "    with pysam.AlignmentFile(sys.argv[2], 'wb', header=source.header) as target:\n"
        "        for read in reads[-1:] + reads[:-1]:\n"
        "            target.write(read)\n"
    )
    result = run([str(WORKLOAD_PYTHON), "-c", script, str(work / "final.bam"), str(unsorted)])
    assert result.returncode == 0, result.stderr
    code, verdict, stderr = validate(work, unsorted, work / "data" / "expected.json")
    assert code == 1
    assert "not coordinate sorted" in stderr
    assert len(verdict["problems"]) == 1


def test_larger_scales_name_the_inventory_setting_for_real_inputs():
    from spillway.workloads import WorkloadError, load

    with pytest.raises(WorkloadError, match=r"spillway_workload_parameters: \{gatk4: \{reference"):
        load("gatk4").parameters("large")
    inputs = {"reference": "/data/ref.fasta", "reads": "hdfs:///data/sample.bam", "known_sites": "/data/sites.vcf.gz"}
    assert load("gatk4").parameters("large", inputs)["reads"] == "hdfs:///data/sample.bam"
