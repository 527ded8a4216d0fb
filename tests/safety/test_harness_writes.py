"""The harness's writes into a run directory never follow a symbolic link (docs/safety.md, "Run directories are
untrusted input"): a RESUMEd run directory may hold anything, and the harness runs as root. Each test plants links
where the harness writes (raw/<host>/ and its records, the manifest and its temporary file, .bench.pid, logs/ and
the step logs, report.log, raw/prometheus/, attempts/) pointing at a decoy folder outside the run, lets the harness
write, and checks that the decoy's files hash as before and that the marker the harness wrote appears nowhere in
it: a file link is replaced by the harness's own file, a folder link is refused naming it."""
import hashlib
import json
import os
import subprocess
import sys
import threading

import pytest

from run_layout import writing
from spillway import ansible
from spillway.bench import reporting
from spillway.monitoring import Monitoring
from spillway import REPO
from spillway.run_record import RunDirectory, write_host_facts

MARKER = "MARKER-written-by-the-harness-41"


@pytest.fixture
def decoy(tmp_path):
    """A folder outside the run with a file a write through a link would change; `unchanged()` checks it."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "precious.json").write_text('{"not": "the harness\'s to change"}\n')

    def fingerprint():
        return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in sorted(folder.rglob("*")) if path.is_file()}

    before = fingerprint()

    class Decoy:
        path = folder
        file = folder / "precious.json"

        @staticmethod
        def unchanged():
            assert fingerprint() == before
            assert not any(MARKER in path.read_text(errors="replace")
                           for path in folder.rglob("*") if path.is_file())
    return Decoy


@pytest.fixture
def run(tmp_path):
    path = tmp_path / "results" / "20261128-000000-local"
    (path / "raw").mkdir(parents=True)
    (path / "logs").mkdir()
    return RunDirectory(path, {"run_id": path.name, "status": "running", "note": MARKER, "steps": [],
                               "workloads": []})


def facts(run):
    return {"facts": {"marker": MARKER}, "storage": json.dumps({"marker": MARKER}), "monitoring": None}


# ---------------------------------------------------------------- raw/<host>/: the host's records

@pytest.mark.parametrize("linked", ["raw/vm", "raw"])
def test_a_host_folder_or_raw_folder_that_is_a_link_is_refused_naming_it(run, decoy, linked):
    target = run.path / linked
    if target.exists():
        target.rmdir()
    target.symlink_to(decoy.path, target_is_directory=True)
    with pytest.raises(writing.Refused, match=f"{target} is a symbolic link .*does not write through it"):
        write_host_facts(run.path, "vm", facts(run))
    decoy.unchanged()
    assert not (decoy.path / "facts.json").exists() and not (decoy.path / "vm").exists()


@pytest.mark.parametrize("record", ["facts.json", "storage.json"])
def test_a_host_record_that_is_a_link_is_replaced_and_its_target_stays_untouched(run, decoy, record):
    (run.path / "raw" / "vm").mkdir()
    (run.path / "raw" / "vm" / record).symlink_to(decoy.file)
    write_host_facts(run.path, "vm", facts(run))
    decoy.unchanged()
    written = run.path / "raw" / "vm" / record
    assert not written.is_symlink() and MARKER in written.read_text()


# ---------------------------------------------------------------- the manifest and .bench.pid

@pytest.mark.parametrize("name", [".manifest.json.tmp", ".bench.pid"])
def test_a_link_at_the_manifests_former_temporary_file_or_the_pid_file_writes_nothing_through_it(run, decoy, name):
    (run.path / name).symlink_to(decoy.file)
    run.save()
    run.mark_running()
    decoy.unchanged()
    assert json.loads((run.path / "manifest.json").read_text())["note"] == MARKER
    assert not (run.path / "manifest.json").is_symlink() and not (run.path / ".bench.pid").is_symlink()


# ---------------------------------------------------------------- logs/: the steps' logs and report.log

def test_a_report_log_that_is_a_link_is_replaced_and_its_target_stays_untouched(run, decoy, monkeypatch):
    (run.path / "logs" / "report.log").symlink_to(decoy.file)
    monkeypatch.setattr(reporting.subprocess, "run",
                        lambda command, **_: subprocess.CompletedProcess(command, 1, MARKER, MARKER))
    assert reporting.build_report(run, "report", rebuild_tables=False) is None
    decoy.unchanged()
    assert MARKER in (run.path / "logs" / "report.log").read_text()


def never_started(*_args, **_kwargs):
    raise AssertionError("ansible-playbook started although its log is refused")


def test_a_logs_folder_that_is_a_link_is_refused_before_ansible_starts(run, decoy, monkeypatch):
    monkeypatch.setattr(ansible, "_start", never_started)
    os.rmdir(run.path / "logs")
    (run.path / "logs").symlink_to(decoy.path, target_is_directory=True)
    with pytest.raises(writing.Refused, match=f"{run.path / 'logs'} is a symbolic link"):
        ansible.run_playbook("local", "facts.yml", {"marker": MARKER}, run.path / "logs" / "facts.log")
    decoy.unchanged()
    assert sorted(p.name for p in decoy.path.iterdir()) == ["precious.json"]


@pytest.mark.parametrize("entry", ["a link", "a FIFO"])
def test_a_step_log_that_is_a_link_or_a_fifo_is_refused_before_ansible_starts(run, decoy, monkeypatch, entry):
    monkeypatch.setattr(ansible, "_start", never_started)
    log = run.path / "logs" / "facts.log"
    log.symlink_to(decoy.file) if entry == "a link" else os.mkfifo(log)
    outcome = {}

    def attempt():
        try:
            ansible.run_playbook("local", "facts.yml", {"marker": MARKER}, log)
        except writing.Refused as refused:
            outcome["refused"] = str(refused)
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():   # blocked opening the FIFO: release it so the test ends
        os.close(os.open(log, os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail(f"{entry} at the step log: the harness blocked opening it")
    assert str(log) in outcome.get("refused", "")
    decoy.unchanged()


def test_a_log_of_a_part_that_is_a_link_is_refused_and_nothing_is_written_through(run, decoy, monkeypatch):
    monkeypatch.setattr(ansible, "_start", never_started)
    (run.path / "logs" / "w.begin.log").symlink_to(decoy.file)
    with pytest.raises(writing.Refused, match="does not append through it"):
        list(ansible.run_playbook_in_parts("local", "workload-run.yml", {"marker": MARKER}, ["begin", "end"],
                                           lambda play: None, lambda part: run.path / "logs" / f"w.{part}.log"))
    decoy.unchanged()


# ---------------------------------------------------------------- raw/prometheus/ and attempts/

def test_a_prometheus_folder_that_is_a_link_is_refused(run, decoy, monkeypatch):
    monitoring = Monitoring(prometheus_url="http://127.0.0.1:9")
    monkeypatch.setattr(monitoring, "query_range", lambda *_: [{"marker": MARKER}])
    (run.path / "raw" / "prometheus").symlink_to(decoy.path, target_is_directory=True)
    with pytest.raises(writing.Refused, match="prometheus is a symbolic link"):
        monitoring.archive(run.path, "w", 0.0, 60.0, [("q", "up", "count")])
    decoy.unchanged()


def attempt_record(run):
    outputs = run.path / "raw" / "vm" / "iostat" / "w"
    outputs.mkdir(parents=True)
    (outputs / "iostat.json").write_text(MARKER)
    (run.path / "logs" / "w.run.log").write_text(MARKER)
    return {"id": "w", "status": "failed", "steps": [{"name": "run", "log": "logs/w.run.log"}]}


def test_an_attempts_folder_that_is_a_link_is_refused_and_nothing_moves_out_of_the_run(run, decoy):
    record = attempt_record(run)
    (run.path / "attempts").symlink_to(decoy.path, target_is_directory=True)
    with pytest.raises(writing.Refused, match=f"{run.path / 'attempts'} is a symbolic link"):
        run.set_attempt_aside(record, 1)
    decoy.unchanged()
    assert sorted(p.name for p in decoy.path.iterdir()) == ["precious.json"]
    assert (run.path / "raw" / "vm" / "iostat" / "w" / "iostat.json").read_text() == MARKER


def test_a_source_folder_that_links_out_of_the_run_is_not_emptied_into_attempts(run, decoy):
    """raw/vm/iostat -> the decoy, which holds a folder named as the workload run: setting the attempt aside would
    move the decoy's files into the run (a write outside it: they vanish from where they were)."""
    (decoy.path / "w").mkdir()
    (decoy.path / "w" / "kept.txt").write_text("outside the run\n")
    (run.path / "raw" / "vm").mkdir()
    (run.path / "raw" / "vm" / "iostat").symlink_to(decoy.path, target_is_directory=True)
    with pytest.raises(writing.Refused, match="iostat is a symbolic link"):
        run.set_attempt_aside({"id": "w", "status": "failed", "steps": []}, 1)
    assert (decoy.path / "w" / "kept.txt").read_text() == "outside the run\n"
    assert not (run.path / "attempts").exists()


# ---------------------------------------------------------------- the collectors' fetch (tar and Ansible's fetch)

def prepare_fetch(run):
    return subprocess.run([sys.executable, "-m", "spillway.run_record", "prepare-fetch", str(run.path), "vm"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("linked", ["raw/vm/iostat", "raw/vm/iostat/w"])
def test_a_link_where_the_fetch_unpacks_is_refused_before_tar_runs(run, decoy, linked):
    """tar follows a link planted at raw/<host>/<source>/ (it extracts <source>/<workload-id>/ through it)."""
    (run.path / linked).parent.mkdir(parents=True, exist_ok=True)
    (run.path / linked).symlink_to(decoy.path, target_is_directory=True)
    done = prepare_fetch(run)
    assert done.returncode == 2 and f"{run.path / linked} is a symbolic link" in done.stderr
    decoy.unchanged()


def test_a_link_where_the_fetch_puts_the_archive_is_removed_not_followed(run, decoy):
    (run.path / "raw" / ".fetch-vm.tgz").symlink_to(decoy.file)
    assert prepare_fetch(run).returncode == 0
    assert not os.path.lexists(run.path / "raw" / ".fetch-vm.tgz") and (run.path / "raw" / "vm").is_dir()
    decoy.unchanged()
