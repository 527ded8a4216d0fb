"""The sort workload (HiBench's Sort) for real: WordCount's generator makes the random text in Spark local mode
(twice, with other partitions: the same text), the Sort job sorts it into files each in order, and the Python check
(workloads/sort/check_sorted.py) accepts what the job wrote; then outputs that must fail the check: lines out of
order, a line lost, a line twice, a line changed (same length, count and order).
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spark_local import REPO, SPARK_HOME, build_job, run_job, spark_jars_present

WORKLOAD = REPO / "workloads" / "sort"
BYTES, SEED, REDUCERS = 300_000, 11, 3

pytestmark = pytest.mark.skipif(not spark_jars_present("spark-core"),
                                reason=f"needs the Spark jars in {SPARK_HOME}/jars: run `make setup` first")


def file_lines(folder: Path):
    return {part.name: part.read_bytes().splitlines() for part in sorted(folder.glob("part-*"))}


def check(text: Path, output: Path, out: Path):
    """Runs the check as the validate step does; returns (exit code, stderr, validation.json)."""
    result = subprocess.run([sys.executable, str(WORKLOAD / "check_sorted.py"), str(text), str(output), str(out)],
                            capture_output=True, text=True, timeout=120)
    return result.returncode, result.stderr, json.loads(out.read_text())


@pytest.fixture(scope="module")
def sorted_text(tmp_path_factory):
    """(work, text dir as 3 generator partitions, the same text as 2, sort summary, output dir)."""
    work = tmp_path_factory.mktemp("sort")
    generator = build_job("wordcount", work / "build" / "generator.jar", "spillway.wordcount.WordCountSpark")
    jar = build_job("sort", work / "build" / "sort.jar", "spillway.sort.SortSpark")
    for partitions in (3, 2):
        run_job(work, generator, "generate", f"file://{work}/text-{partitions}", BYTES, SEED, partitions)
    output = work / "sorted"
    job = run_job(work, jar, "sort", f"file://{work}/text-3/text", f"file://{output}", REDUCERS)
    return work, work / "text-3" / "text", work / "text-2" / "text", job, output


def test_sort_writes_the_inputs_lines_each_file_in_order(sorted_text, tmp_path):
    _, text, _, job, output = sorted_text
    assert job["ok"] and job["reducers"] == REDUCERS
    files = file_lines(output)
    assert len(files) == REDUCERS
    assert all(lines == sorted(lines) for lines in files.values())
    everything = [line for lines in files.values() for line in lines]
    assert sorted(everything) == sorted(line for lines in file_lines(text).values() for line in lines)
    code, stderr, validation = check(text, output, tmp_path / "validation.json")
    assert code == 0, stderr
    assert validation["ok"] and validation["problems"] == []
    assert validation["lines"] == validation["spark_lines"] == len(everything)
    assert validation["bytes"] == validation["spark_bytes"] == sum(p.stat().st_size for p in text.glob("part-*"))


def test_the_same_text_whatever_the_generators_partitions_passes_the_same_check(sorted_text, tmp_path):
    _, text, text_in_two, _, output = sorted_text
    assert len(file_lines(text_in_two)) == 2
    code, stderr, validation = check(text_in_two, output, tmp_path / "validation.json")
    assert code == 0 and validation["ok"], stderr


def rewrite(output: Path, change):
    """Applies change(files) to Spark's {file name: lines} and writes the files back."""
    files = file_lines(output)
    change(files)
    for name, lines in files.items():
        (output / name).write_bytes(b"".join(line + b"\n" for line in lines))


def swap_two(lines):
    lines[10], lines[11] = lines[11], lines[10]


def change_a_letter(lines):
    """A letter of a line changed, the file sorted again: the same count, bytes and order."""
    line = lines[20]
    lines[20] = line[:-1] + (b"b" if line[-1:] == b"a" else b"a")
    lines.sort()


@pytest.mark.parametrize("change, message", [
    (lambda files: swap_two(files["part-00001"]), r"part-00001 line 12: .* not in ascending order"),
    (lambda files: files["part-00000"].pop(3), r"line count differs: spark \d+, input \d+"),
    (lambda files: files["part-00002"].insert(5, files["part-00002"][5]), r"line count differs"),
    (lambda files: change_a_letter(files["part-00000"]), r"the lines differ from the input's \(multiset digest"),
])
def test_a_wrong_sort_fails_the_check(sorted_text, tmp_path, change, message):
    _, text, _, _, output = sorted_text
    wrong = tmp_path / "output"
    shutil.copytree(output, wrong)
    rewrite(wrong, change)
    code, stderr, validation = check(text, wrong, tmp_path / "validation.json")
    assert code == 1 and not validation["ok"]
    assert re.search(message, validation["difference"]), validation
    assert validation["problems"] == [validation["difference"]]
    assert "not the input sorted" in stderr


def test_sort_reads_wordcounts_text_not_a_copy_of_its_generator():
    script = (WORKLOAD / "sort").read_text()
    assert '. "$here/../wordcount/randomtext.sh"' in script
    assert not any("SplittableRandom" in java.read_text() for java in WORKLOAD.rglob("*.java"))
