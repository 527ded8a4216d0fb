"""analysis.parsers.step_logs on the recorded default bench tests/fixtures/runs/bench-tiny (its manifest and the Ansible
logs of its prepare, run and validate steps): the timing lines of a log, the workload_commands table, and a copy of
the run made hostile (workload ids that are paths, a symlink or FIFO as a log, a log gone)."""
import json
import os
import shutil
from pathlib import Path

import pytest

from analysis.parsers.manifest import load_manifest
from analysis.parsers.step_logs import COLUMNS, is_plain_id, timing_lines, workload_commands_table

RUN = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "bench-tiny"


def copied_run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(RUN, tmp_path / "run"))


def edit_manifest(run: Path, edit) -> dict:
    manifest = json.loads((run / "manifest.json").read_text())
    edit(manifest)
    (run / "manifest.json").write_text(json.dumps(manifest))
    return load_manifest(run)


def source(sources: list[dict], file: str, workload_id: str | None = None) -> dict:
    found = [s for s in sources if s["file"] == file and workload_id in (None, s["workload_id"])]
    assert len(found) == 1, (file, workload_id, sources)
    return found[0]


def test_a_logs_timing_lines_in_order_and_nothing_of_ansibles_other_output():
    lines = list(timing_lines((RUN / "logs" / "tpch.run.log").read_text()))
    assert len(lines) == 14                     # grep -c '^timing:' of the log's 64 lines
    assert lines[0] == ("common : Validating arguments against arg spec 'main' - The values every role shares "
                        "(paths, versions, daemons, ports, monitoring), and a check of the paths", 0.05)
    assert lines[5] == ("common : Pack on the controller: tpch", 0.40)
    assert lines[-1] == ("Workload command: tpch run: ./tpch run", 75.77)
    text = ("TASK [hadoop : Start]\nok: [worker1]\ntiming: 1.2.3 s  Workload command: looks like one\n"
            "  timing:    0.40 s  indented\ntiming:    0.25 s  Write a file: facts.json")
    assert list(timing_lines(text)) == [("Write a file: facts.json", 0.25)]


def test_the_recorded_bench_gives_one_row_per_workload_command_of_its_steps():
    table, sources = workload_commands_table(RUN, load_manifest(RUN))
    assert list(table.columns) == COLUMNS and table["duration_s"].dtype == "float64"
    assert len(table) == 17                     # grep -c 'timing: .* Workload command' logs/*.log
    rows = table.set_index(["workload_id", "step"])
    # grep 'Workload command' logs/tpch.run.log: `timing:   75.77 s  Workload command: tpch run: ./tpch run`
    assert rows.loc[("tpch", "run"), "task"] == "Workload command: tpch run: ./tpch run"
    assert rows.loc[("tpch", "run"), "duration_s"] == 75.77
    assert rows.loc[("terasort-mapreduce", "validate"), "duration_s"] == 7.70
    assert rows.loc[("kmeans", "prepare"), "duration_s"] == 26.20
    # gatk4's prepare runs two commands, in this order in its log
    gatk4 = table[(table["workload_id"] == "gatk4") & (table["step"] == "prepare")]
    assert list(gatk4["task"]) == ["Workload command: gatk4 prepare: ./gatk4 prepare",
                                   "Workload command: gatk4 prepare: ./gatk4 stage-reference"]
    assert list(gatk4["duration_s"]) == [10.42, 0.29]
    # fio-sweep has only a run step; the begin and end steps' logs are not read
    assert list(table.loc[table["workload_id"] == "fio-sweep", "step"]) == ["run"]
    assert table["duration_s"].sum() == pytest.approx(436.37)     # awk of the grep: their sum
    # the tasks around the commands (shipping the job code, the storage layout) are no rows
    assert table["task"].str.startswith("Workload command: ").all()
    assert len(sources) == 16 and {s["status"] for s in sources} == {"ok"}
    assert source(sources, "logs/gatk4.prepare.log")["rows"] == 2
    assert {s["source"] for s in sources} == {"step-log"} and {s["host"] for s in sources} == {""}


@pytest.mark.parametrize("workload_id", ["kmeans-0.5", "gatk4-hdfs_hdd-local_ssd-r2", "terasort-p1",
                                         "terasort-warmup", "tpch-engine=spark,rows=1+2"])
def test_the_benchs_workload_ids_are_plain_names(workload_id):
    assert is_plain_id(workload_id)


@pytest.mark.parametrize("workload_id", ["../../etc/passwd", "a/b", "..", "a..b", ".hidden", "-x", "", "tpch\n",
                                         "/etc/passwd", "a\\b", None, 5])
def test_a_path_or_anything_else_is_not_a_plain_name(workload_id):
    assert not is_plain_id(workload_id)


def test_a_workload_id_that_is_a_path_reads_nothing_outside_logs_and_says_why(tmp_path):
    run = copied_run(tmp_path)
    # what reading logs/<id>.run.log would reach for these ids, each with a command line that must not count
    bait = "timing:   99.99 s  Workload command: bait\n"
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd.run.log").write_text(bait)
    (run / "logs" / "a").mkdir()
    (run / "logs" / "a" / "b.run.log").write_text(bait)

    def hostile(manifest):
        for workload, bad in zip(manifest["workloads"][:2], ("../../etc/passwd", "a/b")):
            workload["id"] = bad
            for step in workload["steps"]:
                step["name"] = bad + ": " + step["name"].split(": ", 1)[1]

    table, sources = workload_commands_table(run, edit_manifest(run, hostile))
    assert 99.99 not in set(table["duration_s"])
    assert set(table["workload_id"]) == {"terasort-spark", "tpch", "kmeans", "gatk4"}
    for bad in ("../../etc/passwd", "a/b"):
        note = source(sources, "manifest.json", bad)
        assert note["status"] == "refused" and note["rows"] == 0
        assert repr(bad) in note["message"] and "not a plain name" in note["message"]
    assert not any(s["file"].startswith("logs/..") or s["file"].startswith("logs/a/") for s in sources)


def test_a_symlink_or_fifo_as_a_log_is_refused_and_recorded(tmp_path):
    run = copied_run(tmp_path)
    outside = tmp_path / "outside.log"
    outside.write_text("timing:   99.99 s  Workload command: tpch run: ./tpch run\n")
    (run / "logs" / "tpch.run.log").unlink()
    (run / "logs" / "tpch.run.log").symlink_to(outside)
    (run / "logs" / "kmeans.run.log").unlink()
    os.mkfifo(run / "logs" / "kmeans.run.log")      # opening it would block: it must not be opened
    table, sources = workload_commands_table(run, load_manifest(run))
    assert 99.99 not in set(table["duration_s"])
    assert table[table["step"] == "run"]["workload_id"].tolist() == ["fio-sweep", "terasort-mapreduce",
                                                                     "terasort-spark", "gatk4"]
    linked = source(sources, "logs/tpch.run.log")
    assert linked["status"] == "refused" and "symbolic link" in linked["message"]
    fifo = source(sources, "logs/kmeans.run.log")
    assert fifo["status"] == "refused" and "FIFO" in fifo["message"]
    assert source(sources, "logs/tpch.prepare.log")["status"] == "ok"


def test_a_logs_folder_that_is_a_symlink_is_not_read_through(tmp_path):
    run = copied_run(tmp_path)
    shutil.move(run / "logs", tmp_path / "elsewhere")
    (run / "logs").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    table, sources = workload_commands_table(run, load_manifest(run))
    assert table.empty
    assert {s["status"] for s in sources} == {"refused"}
    assert all("symbolic link" in s["message"] for s in sources)


def test_a_missing_log_is_missing_only_for_a_step_that_ended_ok(tmp_path):
    run = copied_run(tmp_path)
    (run / "logs" / "tpch.run.log").unlink()
    (run / "logs" / "tpch.validate.log").unlink()

    def validate_failed(manifest):
        tpch = next(w for w in manifest["workloads"] if w["id"] == "tpch")
        next(s for s in tpch["steps"] if s["name"] == "tpch: validate")["status"] = "failed"

    table, sources = workload_commands_table(run, edit_manifest(run, validate_failed))
    assert table[table["workload_id"] == "tpch"]["step"].tolist() == ["prepare"]
    missing = source(sources, "logs/tpch.run.log")
    assert missing["status"] == "missing" and missing["message"] == "no logs/tpch.run.log, though the step ended ok"
    assert not [s for s in sources if s["file"] == "logs/tpch.validate.log"]


def test_a_log_without_a_command_line_is_ok_with_a_note_and_a_manifest_without_workloads_gives_nothing(tmp_path):
    run = copied_run(tmp_path)
    log = run / "logs" / "tpch.run.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if "Workload command" not in line))
    table, sources = workload_commands_table(run, load_manifest(run))
    assert ("tpch", "run") not in set(zip(table["workload_id"], table["step"]))
    entry = source(sources, "logs/tpch.run.log")
    assert entry["status"] == "ok" and entry["rows"] == 0
    assert entry["message"] == "no timing line of a workload command"
    empty, none = workload_commands_table(run, {})
    assert empty.empty and list(empty.columns) == COLUMNS and none == []
