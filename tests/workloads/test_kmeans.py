"""The K-means workload for real: its Spark job in Spark local mode on a few thousand points, and its
model check (workloads/kmeans/check_model.py) on what the job wrote.

Flow: build the job jar, generate twice with the same seed (identical points, read back here with an
independent sequence-file reader), train k=10 and validate (passes), then models that must fail: centres
moved, a cost that increases, and a real model trained with k too small.
"""

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from spark_local import REPO, SPARK_HOME, build_job, spark_jars_present, submit, summary

WORKLOAD = REPO / "workloads" / "kmeans"
CHECK = WORKLOAD / "check_model.py"

POINTS = 6000
DIMENSIONS = 24
K = 10
SPREAD = 0.01
SEED = 7
PARTITIONS = 3
ITERATIONS = 2

pytestmark = pytest.mark.skipif(
    not spark_jars_present("spark-core", "spark-mllib"),
    reason=f"needs the Spark jars (spark-core, spark-mllib) in {SPARK_HOME}/jars: run `make setup` first",
)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)


def spark_job(work: Path, jar: Path, *args):
    """Runs the job jar in local mode; returns its JSON summary."""
    result = submit(work, jar, *args, timeout=300)
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return summary(result)


def generate(work: Path, jar: Path, name: str):
    spark_job(work, jar, "generate", f"file://{work / name}", POINTS, DIMENSIONS, K, SPREAD, SEED, PARTITIONS)
    return work / name


def train(work: Path, jar: Path, data: Path, k: int, name: str):
    summary = spark_job(work, jar, "train", f"file://{data / 'points'}", f"file://{work / name}", k, ITERATIONS,
                        SEED, "MEMORY_ONLY")
    return summary, work / name


def check(work: Path, truth: Path, model: dict, name: str):
    """Runs the model check on a model (as written by train, or altered); returns (exit code, stderr, result)."""
    model_path = work / f"{name}.json"
    model_path.write_text(json.dumps(model))
    out = work / f"{name}-validation.json"
    result = run([sys.executable, str(CHECK), str(truth), str(model_path), str(out)])
    return result.returncode, result.stderr, json.loads(out.read_text())


def read_points(points_dir: Path):
    """(id, vector) of every record of the job's sequence files, read without Hadoop: the header (magic,
    class names, flags, metadata, sync marker), then records of (length, key length, key, value), with a
    -1 length announcing a sync marker."""
    points = {}
    for part in sorted(points_dir.glob("part-*")):
        data = part.read_bytes()
        assert data[:4] == b"SEQ\x06", part
        position = 4
        classes = []
        for _ in range(2):
            length = data[position]  # a one-byte vint: class names are shorter than 128 bytes
            classes.append(data[position + 1:position + 1 + length].decode())
            position += 1 + length
        assert classes == ["org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.BytesWritable"]
        assert data[position:position + 2] == b"\x00\x00", "compressed sequence file"
        position += 2
        assert struct.unpack_from(">i", data, position)[0] == 0, "unexpected metadata"
        position += 4 + 16
        while position < len(data):
            record_length, = struct.unpack_from(">i", data, position)
            if record_length == -1:
                position += 4 + 16
                continue
            key_length, = struct.unpack_from(">i", data, position + 4)
            key = data[position + 8:position + 8 + key_length]
            value = data[position + 8 + key_length:position + 8 + record_length]
            position += 8 + record_length
            point_id, = struct.unpack(">q", key)
            size, = struct.unpack_from(">i", value)
            assert size == 8 * DIMENSIONS and point_id not in points
            points[point_id] = struct.unpack_from(f">{DIMENSIONS}d", value, 4)
    return points


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("kmeans")
    jar = build_job("kmeans", work / "build" / "job.jar", "spillway.kmeans.KMeansSpark")
    data = generate(work, jar, "data")
    summary, model_dir = train(work, jar, data, K, "model")
    return work, jar, data, summary, json.loads((model_dir / "model.json").read_text())


def test_generated_points_lie_around_the_true_centres(trained):
    _, _, data, _, _ = trained
    truth = json.loads((data / "centres.json").read_text())
    assert len(truth["centres"]) == K and truth["sigma"] == pytest.approx(SPREAD * truth["min_centre_distance"])
    points = read_points(data / "points")
    assert sorted(points) == list(range(POINTS))
    squared = [min(math.dist(point, centre) for centre in truth["centres"]) ** 2 for point in points.values()]
    # Each coordinate is its centre's plus N(0, sigma^2): the mean squared distance is dimensions * sigma^2.
    assert sum(squared) / POINTS == pytest.approx(DIMENSIONS * truth["sigma"] ** 2, rel=0.05)


def test_same_seed_generates_identical_points(trained):
    work, jar, data, _, _ = trained
    again = generate(work, jar, "data-again")
    assert (again / "centres.json").read_text() == (data / "centres.json").read_text()
    assert read_points(again / "points") == read_points(data / "points")


def test_training_recovers_the_centres_and_records_every_iteration(trained):
    work, _, data, summary, model = trained
    assert summary["points"] == POINTS and summary["k"] == K and summary["dimensions"] == DIMENSIONS
    rows = (work / "model" / "iterations.csv").read_text().splitlines()
    assert rows[0] == "iteration,cost,seconds" and len(rows) == ITERATIONS + 2  # the initialisation is row 0
    assert [row["iteration"] for row in model["per_iteration"]] == list(range(ITERATIONS + 1))
    code, stderr, result = check(work, data / "centres.json", model, "good")
    assert code == 0, stderr
    assert result["ok"] and result["max_centre_error"] < result["tolerance"]
    assert result["final_cost_ratio"] == pytest.approx(1, abs=0.05)


def test_moved_centre_fails_validation(trained):
    work, _, data, _, model = trained
    truth = json.loads((data / "centres.json").read_text())
    shift = 2 * truth["sigma"]  # along every axis: 2 sigma sqrt(dimensions) in all, twice the tolerance
    moved = {**model, "centres": [[x + shift for x in model["centres"][0]], *model["centres"][1:]]}
    code, stderr, result = check(work, data / "centres.json", moved, "moved")
    assert code == 1 and not result["ok"]
    assert "has no found centre within" in stderr
    assert len(result["problems"]) == 1  # costs untouched: only the centre is wrong


def test_increasing_cost_fails_validation(trained):
    work, _, data, _, model = trained
    rows = [dict(row) for row in model["per_iteration"]]
    rows[1]["cost"] = rows[0]["cost"] * 1.01
    code, stderr, _ = check(work, data / "centres.json", {**model, "per_iteration": rows}, "cost-up")
    assert code == 1 and "cost increased at iteration 1" in stderr


def test_model_with_too_few_clusters_fails_validation(trained):
    work, jar, data, _, _ = trained
    _, model_dir = train(work, jar, data, K - 1, "model-k9")
    model = json.loads((model_dir / "model.json").read_text())
    code, stderr, result = check(work, data / "centres.json", model, "k9")
    assert code == 1 and not result["ok"]
    # Two clusters share a centre: it sits far from at least one of them, and the cost is far too high.
    assert "has no found centre within" in stderr or "shares its found centre" in stderr
    assert result["final_cost_ratio"] > 2
