"""The wordcount workload (HiBench's WordCount) for real: its Spark job in Spark local mode generates the random text
twice with the same seed (identical text whatever the partitions) and once with another, counts the words, and the
Python count (workloads/wordcount/check_counts.py) accepts what the job wrote; then counts that must fail the
check: a count one off, a word lost, a word twice, a word that is not in the text, a line that is not a count.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from spark_local import REPO, SPARK_HOME, build_job, run_job, spark_jars_present

WORKLOAD = REPO / "workloads" / "wordcount"
BYTES, SEED, PARTITIONS, REDUCERS = 400_000, 7, 3, 2

pytestmark = pytest.mark.skipif(not spark_jars_present("spark-core"),
                                reason=f"needs the Spark jars in {SPARK_HOME}/jars: run `make setup` first")


def generate(work: Path, jar: Path, name: str, seed=SEED, partitions=PARTITIONS):
    job = run_job(work, jar, "generate", f"file://{work / name}", BYTES, seed, partitions)
    return job, work / name / "text"


def lines(text_dir: Path):
    """The text's lines, files in order: line 0 first whatever the number of partitions."""
    return [line for part in sorted(text_dir.glob("part-*")) for line in part.read_text().splitlines()]


def check(text: Path, output: Path, out: Path):
    """Runs the check as the validate step does; returns (exit code, stderr, validation.json)."""
    result = subprocess.run([sys.executable, str(WORKLOAD / "check_counts.py"), str(text), str(output), str(out)],
                            capture_output=True, text=True, timeout=120)
    return result.returncode, result.stderr, json.loads(out.read_text())


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """The generated text and its word count: (work, jar, generate summary, text dir, count summary, output dir)."""
    work = tmp_path_factory.mktemp("wordcount")
    jar = build_job("wordcount", work / "build" / "job.jar", "spillway.wordcount.WordCountSpark")
    generated, text = generate(work, jar, "data")
    output = work / "counts"
    job = run_job(work, jar, "count", f"file://{text}", f"file://{output}", REDUCERS)
    return work, jar, generated, text, job, output


def test_same_seed_generates_identical_text_whatever_the_partitions(counted):
    work, jar, generated, text, _, _ = counted
    _, again = generate(work, jar, "data-again", partitions=2)
    assert len(list(again.glob("part-*"))) == 2
    assert lines(again) == lines(text)
    _, other = generate(work, jar, "data-other-seed", seed=SEED + 1)
    assert lines(other) != lines(text) and len(lines(other)) == len(lines(text))


def test_text_has_randomtextwriters_shape_and_the_size_asked_for(counted):
    _, _, generated, text, _, _ = counted
    size = sum(part.stat().st_size for part in text.glob("part-*"))
    assert generated["bytes"] == size and abs(size - BYTES) / BYTES < 0.05
    assert generated["lines"] == len(lines(text))
    vocabulary = set()
    for line in lines(text):
        key, value = line.split("\t")
        assert 5 <= len(key.split(" ")) <= 9 and 10 <= len(value.split(" ")) <= 99
        vocabulary.update(line.split())
    assert 900 < len(vocabulary) <= 1000  # a uniform draw from 1000 words: nearly all of them in 40 k words
    assert all(re.fullmatch(r"[A-Za-z]{2,16}", word) for word in vocabulary)


def test_the_count_is_pythons(counted, tmp_path):
    _, _, _, text, job, output = counted
    code, stderr, validation = check(text, output, tmp_path / "validation.json")
    assert code == 0, stderr
    assert validation["ok"] and validation["problems"] == [] and validation["difference"] is None
    expected = Counter(word for line in lines(text) for word in line.split())
    assert validation["words"] == validation["spark_words"] == job["words"] == sum(expected.values())
    assert validation["distinct_words"] == job["distinct_words"] == len(expected)
    assert len(list(output.glob("part-*"))) == REDUCERS


def rewrite(output: Path, change):
    """Applies change(rows) to Spark's [word, count] rows (all part files, in order), written back as one file."""
    parts = sorted(output.glob("part-*"))
    rows = [line.split("\t") for part in parts for line in part.read_text().splitlines()]
    change(rows)
    for part in parts:
        part.unlink()
    (output / "part-00000").write_text("".join("\t".join(row) + "\n" for row in rows))


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[3].__setitem__(1, str(int(rows[3][1]) + 1)), r"word '\w+': spark \d+, python \d+"),
    (lambda rows: rows.pop(5), r"word '\w+' \(\d+ times\) is missing from spark's counts"),
    (lambda rows: rows.append(list(rows[0])), r"word '\w+' counted twice"),
    (lambda rows: rows.append(["notaword", "1"]), r"word 'notaword' is in spark's counts only"),
    (lambda rows: rows[7].__setitem__(1, "many"), r"line \d+: .* is not 'word TAB count'"),
])
def test_a_wrong_count_fails_the_check(counted, tmp_path, change, message):
    _, _, _, text, _, output = counted
    wrong = tmp_path / "output"
    shutil.copytree(output, wrong)
    rewrite(wrong, change)
    code, stderr, validation = check(text, wrong, tmp_path / "validation.json")
    assert code == 1 and not validation["ok"]
    assert re.search(message, validation["difference"]), validation
    assert validation["problems"] == [validation["difference"]]
    assert "differ from Python's" in stderr


def test_step_script_rejects_an_unknown_step_and_shares_the_generators_version():
    result = subprocess.run(["bash", str(WORKLOAD / "wordcount"), "count"], capture_output=True, text=True,
                            env={**os.environ, "P_BYTES": "1000", "P_SEED": "1", "P_PARTITIONS": "1",
                                 "P_REDUCERS": "1", "SPILLWAY_ROOT": "/nonexistent", "SPILLWAY_OUT": "/nonexistent"})
    assert result.returncode == 2 and "unknown step 'count'" in result.stderr
    script = re.search(r"^randomtext_version=(\S+)$", (WORKLOAD / "randomtext.sh").read_text(), re.M).group(1)
    java = (WORKLOAD / "spark" / "src" / "spillway" / "wordcount" / "RandomText.java").read_text()
    assert f'VERSION = "{script}";' in java
