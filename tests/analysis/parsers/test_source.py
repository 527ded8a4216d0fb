"""The finders of the sources' registry: what each finds in a raw folder, in order, and what an absent file means."""
from __future__ import annotations

import pandas as pd

from analysis.parsers.source import (Absent, Each, First, Found, Source, Whole, Window, missing, none_if_nothing_here,
                                     none_unless_error)


def touch(folder, *names):
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x\n")


def test_each_finds_every_match_in_order_and_says_what_no_match_means(tmp_path):
    touch(tmp_path, "fio-b.json", "fio-a.json", "sub/job.jhist", "other.txt")
    assert Each("fio-*.json")(tmp_path) == [Found(tmp_path / n, (tmp_path / n,)) for n in ("fio-a.json", "fio-b.json")]
    assert [f.named.name for f in Each("**/*.jhist")(tmp_path)] == ["job.jhist"]
    assert Each("*.xml")(tmp_path) == []
    assert Each("*.xml", none_unless_error, what="profile")(tmp_path) == [
        Absent("profile", "none", "no profile: the workload ran none")]


def test_a_literal_name_is_found_even_as_a_dangling_link_so_that_reading_refuses_it(tmp_path):
    (tmp_path / "blocktrace.tsv").symlink_to(tmp_path / "nowhere")
    assert [f.named for f in Each("blocktrace.tsv")(tmp_path)] == [tmp_path / "blocktrace.tsv"]


def test_first_takes_the_preferred_output_then_its_fallback(tmp_path):
    finder = First(("iostat.json", "iostat.txt"), none_if_nothing_here)
    touch(tmp_path, "iostat.txt")
    assert [f.named.name for f in finder(tmp_path)] == ["iostat.txt"]
    touch(tmp_path, "iostat.json")
    assert [f.named.name for f in finder(tmp_path)] == ["iostat.json"]


def test_absent_means_none_where_the_collector_said_nothing_is_here_else_missing_with_its_own_word(tmp_path):
    finder = First(("iostat.json",), none_if_nothing_here)
    touch(tmp_path, "collector-notes.txt")
    (tmp_path / "collector-notes.txt").write_text("first note\nlast note\n")
    assert finder(tmp_path) == [Absent("iostat.json", "missing", "no iostat.json: last note")]
    (tmp_path / "nothing-here.txt").write_text("no block device\n")
    assert finder(tmp_path) == [Absent("iostat.json", "none", "no block device")]


def test_an_application_collectors_error_makes_its_absent_file_missing(tmp_path):
    (tmp_path / "collector-error.txt").write_text("HDFS down\n")
    assert none_unless_error(tmp_path, ".jhist") == ("missing", "HDFS down")
    assert missing(tmp_path, ".jhist") == ("missing", "no .jhist: HDFS down")


def test_a_window_pairs_each_start_with_its_stop(tmp_path):
    finder = Window("client-*.start", none_if_nothing_here, missing, what="client-<backend>.start")
    assert finder(tmp_path) == [Absent("client-<backend>.start", "missing", "no client-<backend>.start")]
    touch(tmp_path, "client-a.start", "client-a.stop", "client-b.start")
    assert finder(tmp_path) == [Found(tmp_path / "client-a.stop", (tmp_path / "client-a.start", tmp_path / "client-a.stop")),
                                Absent("client-b.stop", "missing", "no client-b.stop")]
    assert Window("client-*.start")(tmp_path)[1:] == []            # unpaired meaning nothing: no row


def test_whole_gives_the_folder_named_by_its_last_file(tmp_path):
    touch(tmp_path, "a", "b")
    finder = Whole(lambda folder: sorted(folder.iterdir()))
    assert finder(tmp_path) == [Found(tmp_path / "b", (tmp_path,))]
    assert Whole(lambda folder: [])(tmp_path) == []


def test_a_parser_of_one_table_may_give_its_frame_alone(tmp_path):
    frame = pd.DataFrame({"x": [1]})
    one = Source("toy", Each("*"), lambda path: frame, {"toy": ()})
    assert one.frames(Found(tmp_path, (tmp_path,))) == ({"toy": frame}, "")
    several = Source("toy", Each("*"), lambda path: ({"b": frame, "a": frame}, "note"), {"a": (), "b": ()},
                     row_per_table=True)
    assert several.frames(Found(tmp_path, (tmp_path,)))[1] == "note" and several.counted == ("a", "b")
