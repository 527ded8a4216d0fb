"""The dfsio workload's own code: the step script refuses bad parameters before it touches HDFS, TestDFSIO's size
syntax in bytes, and the validation (workloads/dfsio/check_results.py) on what a real run on the local cluster
wrote (tests/fixtures/workload-results/dfsio-write, dfsio-read: TestDFSIO's result file, `hadoop fs -count` and
`-du` of its files, its reducer's sums), which it accepts, and damaged copies of it, which it must refuse."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "workloads" / "dfsio"
FIXTURES = REPO / "tests" / "fixtures" / "workload-results"
# The recorded run's parameters (the tiny profile): workload.yml's, checked below.
NR_FILES, FILE_SIZE = 4, "16MB"


def step(tmp_path, *args, **params):
    """Runs the step script as a workload step would, without Hadoop: PATH holds no `hadoop`, so a step that got
    past its checks to HDFS fails with 127, not with the checks' 2."""
    env = {"PATH": "/usr/bin:/bin", "SPILLWAY_OUT": str(tmp_path), "HADOOP_TESTS_HOME": str(tmp_path / "absent"),
           "P_MODE": "write", "P_NR_FILES": "4", "P_FILE_SIZE": "16MB", "P_BUFFER_SIZE": "1000000"}
    env.update({f"P_{key.upper()}": value for key, value in params.items()})
    env = {key: value for key, value in env.items() if value is not None}
    return subprocess.run([str(WORKLOAD / "dfsio"), *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, params, message", [
    ((), {}, "usage: dfsio prepare|run|validate"),
    (("generate",), {}, "unknown step 'generate'"),
    (("run",), {"mode": "append"}, "P_MODE: 'append' is not a TestDFSIO mode"),
    (("run",), {"mode": None}, "P_MODE: '' is not a TestDFSIO mode"),
    (("prepare",), {"nr_files": "0"}, "P_NR_FILES: '0' is not a positive whole number"),
    (("prepare",), {"nr_files": "4; rm -rf /"}, "P_NR_FILES: '4; rm -rf /' is not a positive whole number"),
    (("run",), {"buffer_size": "-1"}, "P_BUFFER_SIZE: '-1' is not a positive whole number"),
    (("run",), {"file_size": "16mb"}, "file size '16mb' is not a whole number with B, KB, MB, GB or TB"),
    (("run",), {"file_size": "1.5GB"}, "file size '1.5GB' is not a whole number"),
    (("validate",), {"file_size": "0MB"}, "file size '0MB' is not a whole number"),
])
def test_the_step_script_refuses_bad_arguments_before_touching_hdfs(tmp_path, args, params, message):
    result = step(tmp_path, *args, **params)
    assert result.returncode in (1, 2) and message in result.stderr, result.stderr
    assert "hadoop" not in result.stderr.replace("(role hadoop_install)", "")
    assert list(tmp_path.iterdir()) == []


def test_good_arguments_get_as_far_as_the_test_jars(tmp_path):
    result = step(tmp_path, "prepare")
    assert result.returncode == 1
    assert f"Hadoop's test jars are not in {tmp_path}/absent/lib (role hadoop_install): run make setup" in result.stderr


@pytest.mark.parametrize("size, expected", [("1B", 1), ("16KB", 16 << 10), ("16MB", 16 << 20), ("10MB", 10485760),
                                            ("400MB", 400 << 20), ("2GB", 2 << 30), ("1TB", 1 << 40)])
def test_sizes_are_testdfsios_binary_multiples(size, expected):
    result = subprocess.run([sys.executable, str(WORKLOAD / "check_results.py"), "bytes", size],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and int(result.stdout) == expected


def test_the_profiles_are_sizes_the_script_takes():
    import yaml
    manifest = yaml.safe_load((WORKLOAD / "workload.yml").read_text())
    assert (manifest["scales"]["tiny"]["nr_files"], manifest["scales"]["tiny"]["file_size"]) == (NR_FILES, FILE_SIZE)
    for profile in manifest["scales"].values():
        result = subprocess.run([sys.executable, str(WORKLOAD / "check_results.py"), "bytes", profile["file_size"]],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, profile


def check(folder: Path, mode: str, out: Path, nr_files=NR_FILES, file_size=FILE_SIZE):
    """The validate step's check on `folder`'s files; (exit code, stderr, validation.json)."""
    result = subprocess.run([sys.executable, str(WORKLOAD / "check_results.py"), "check", mode, str(nr_files),
                             file_size, str(folder / "TestDFSIO_results.log"), str(folder / "hdfs-count.txt"),
                             str(folder / "hdfs-du.txt"), str(folder / f"testdfsio-{mode}-sums.txt"), str(out)],
                            capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr, json.loads(out.read_text())


@pytest.mark.parametrize("mode", ["write", "read"])
def test_the_recorded_run_validates_and_its_figures_agree(tmp_path, mode):
    code, stderr, validation = check(FIXTURES / f"dfsio-{mode}", mode, tmp_path / "validation.json")
    assert code == 0, stderr
    assert validation["ok"] and validation["problems"] == []
    assert validation["hdfs_files"] == NR_FILES and validation["hdfs_bytes"] == NR_FILES * (16 << 20)
    figures = validation["results"]
    assert figures["files"] == NR_FILES and figures["mib_processed"] == 64
    assert abs(figures["throughput_mib_s"] - validation["recomputed_throughput_mib_s"]) < 0.01
    # the step wrote the same verdict on the cluster
    assert json.loads((FIXTURES / f"dfsio-{mode}" / "validation.json").read_text()) == validation


def damaged(tmp_path: Path, mode: str, name: str, change) -> Path:
    folder = tmp_path / mode
    shutil.copytree(FIXTURES / f"dfsio-{mode}", folder)
    (folder / name).write_text(change((folder / name).read_text()))
    return folder


def replace_figure(label, value):
    """A result file with `label`'s figure in the last section replaced by `value`."""
    def change(text):
        lines = text.splitlines(keepends=True)
        index = max(i for i, line in enumerate(lines) if line.strip().startswith(label + ":"))
        lines[index] = lines[index].split(":")[0] + f": {value}\n"
        return "".join(lines)
    return change


@pytest.mark.parametrize("mode, name, change, problem", [
    ("write", "hdfs-du.txt", lambda text: "".join(text.splitlines(keepends=True)[:-1]), "files missing: test_io_"),
    ("write", "hdfs-du.txt", lambda text: text.replace("16777216", "16777215", 1), "files not of 16777216 bytes"),
    ("read", "hdfs-count.txt", lambda text: text.replace(" 4 ", " 3 ", 1), "HDFS holds 3 files"),
    ("write", "testdfsio-write-sums.txt", lambda text: text.replace("67108864", "50331648"),
     "the job's tasks processed 50331648 bytes"),
    ("read", "testdfsio-read-sums.txt", lambda text: "", "the job's output has no size, tasks, time, rate total"),
    ("write", "TestDFSIO_results.log", lambda text: text.replace(": write", ": read"), "no write section"),
    ("read", "TestDFSIO_results.log", replace_figure("Throughput mb/sec", 1.5), "throughput 1.5 MiB/s in the log"),
    ("write", "TestDFSIO_results.log", replace_figure("Average IO rate mb/sec", 9999), "average IO rate 9999"),
    ("write", "TestDFSIO_results.log", replace_figure("Total MBytes processed", 48), "48.0 MiB, expected 4 and 64"),
    ("read", "TestDFSIO_results.log", replace_figure("Test exec time sec", 0.01), "is below"),
])
def test_damaged_outputs_fail_naming_the_problem(tmp_path, mode, name, change, problem):
    folder = damaged(tmp_path, mode, name, change)
    code, stderr, validation = check(folder, mode, tmp_path / "validation.json")
    assert code == 1 and not validation["ok"]
    assert any(problem in p for p in validation["problems"]), validation["problems"]
    assert problem in stderr


def test_other_parameters_than_the_runs_fail(tmp_path):
    code, _, validation = check(FIXTURES / "dfsio-write", "write", tmp_path / "v.json", file_size="8MB")
    assert code == 1 and any("expected 4 of 33554432" in p for p in validation["problems"])
    code, _, validation = check(FIXTURES / "dfsio-write", "write", tmp_path / "v.json", nr_files=5)
    assert code == 1 and any("files missing: test_io_4" in p for p in validation["problems"])
