"""run_layout/writing.py: writes into a run directory never go through a symbolic link (the harness's and the
analysis' cases through their own code: tests/safety/test_harness_writes.py, test_untrusted_run_directory.py)."""
import os

import pytest

from run_layout import writing


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "kept.txt").write_text("kept\n")
    return folder


def test_below_a_root_a_link_at_any_folder_on_the_way_is_refused_naming_it(tmp_path, outside):
    run = tmp_path / "run"
    (run / "raw").mkdir(parents=True)
    (run / "raw" / "vm").symlink_to(outside, target_is_directory=True)
    with pytest.raises(writing.Refused, match=f"{run / 'raw' / 'vm'} is a symbolic link .*Spillway does not"):
        writing.write_text(run / "raw" / "vm" / "iostat" / "x.json", "{}", run)
    assert sorted(p.name for p in outside.iterdir()) == ["kept.txt"]


def test_without_a_root_only_the_last_folder_is_checked_and_a_file_link_is_replaced(tmp_path, outside):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").symlink_to(outside / "kept.txt")
    writing.write_text(tmp_path / "logs" / "a.log", "new\n", writer="the analysis")
    assert (outside / "kept.txt").read_text() == "kept\n" and not (tmp_path / "logs" / "a.log").is_symlink()
    with pytest.raises(writing.Refused, match="a.log is not a directory: the analysis cannot write into it"):
        writing.write_text(tmp_path / "logs" / "a.log" / "b", "x", writer="the analysis")
    (tmp_path / "tables").symlink_to(outside, target_is_directory=True)
    with pytest.raises(writing.Refused, match="the analysis does not write through it"):
        writing.directory(tmp_path / "tables", writer="the analysis")


def test_appending_adds_to_a_regular_file_and_creates_missing_folders_below_the_root(tmp_path):
    for line in ("one\n", "two\n"):
        with writing.appending(tmp_path / "logs" / "step.log", tmp_path) as log:
            log.write(line)
    assert (tmp_path / "logs" / "step.log").read_text() == "one\ntwo\n"


def test_a_link_is_moved_as_a_link_never_followed(tmp_path, outside):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "w").symlink_to(outside, target_is_directory=True)
    writing.move(tmp_path / "raw" / "w", tmp_path / "attempts" / "w.attempt-1" / "w", tmp_path)
    moved = tmp_path / "attempts" / "w.attempt-1" / "w"
    assert moved.is_symlink() and os.readlink(moved) == str(outside)
    assert sorted(p.name for p in outside.iterdir()) == ["kept.txt"]
