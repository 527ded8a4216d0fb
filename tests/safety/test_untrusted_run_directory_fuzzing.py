"""Run directories are untrusted input (docs/safety.md), fuzzed: manifests, iostat reports and the other sources,
damaged or replaced field by field (Hypothesis, a fixed budget of examples), are recorded in `sources` and never stop
`python -m analysis tables` / `report` (test_untrusted_run_directory.py has the planted cases)."""
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES, build_tables
from untrusted_runs import EVENT_LOG, FIXTURES, RECORDED_RUN, TOOLS, plant, row


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=24)
RECORDED_MANIFEST = json.loads((RECORDED_RUN / "manifest.json").read_text())


def _replaced(document, path: list[str], value):
    """A copy of a JSON document with the value at `path` (keys and list indices as text) replaced."""
    document = json.loads(json.dumps(document))
    node = document
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(path[-1]) if isinstance(node, list) else path[-1]] = value
    return document


def _paths(document, prefix=()) -> list[list[str]]:
    children = document.items() if isinstance(document, dict) else enumerate(document) \
        if isinstance(document, list) else ()
    found = []
    for key, child in children:
        found.append([*prefix, str(key)])
        found += _paths(child, (*prefix, str(key)))
    return found


IOSTAT_TEXT = (TOOLS / "iostat" / "iostat-killed.json").read_text()


def _damaged(draw, text: str) -> bytes:
    """A recorded file cut anywhere, with a stretch replaced by any JSON value, with one field (of the document,
    or of one line of a JSON-lines file) replaced by any JSON value, or replaced whole by any JSON or bytes."""
    kind = draw(st.sampled_from(["cut", "spliced", "field", "json", "bytes"]))
    if kind == "cut":
        return text[:draw(st.integers(0, len(text)))].encode()
    if kind == "spliced":
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 200)))
        return (text[:start] + json.dumps(draw(JSON)) + text[end:]).encode()
    if kind == "field":
        try:
            document = json.loads(text)
        except ValueError:          # JSON lines (an event log), or no JSON: one line's field, if it has one
            lines = text.splitlines(keepends=True)
            index = draw(st.integers(0, len(lines) - 1))
            try:
                lines[index] = json.dumps(_field_replaced(draw, json.loads(lines[index]))) + "\n"
            except ValueError:
                pass
            return "".join(lines).encode()
        return json.dumps(_field_replaced(draw, document)).encode()
    return json.dumps(draw(JSON)).encode() if kind == "json" else draw(st.binary(max_size=256))


def _field_replaced(draw, document):
    """`document` with a field replaced by any JSON value; each depth as likely as another, so that the few fields
    near the top (names, ids, layout) are hit as often as the many counters below them."""
    paths = _paths(document)
    if not paths:
        return draw(JSON)
    depth = draw(st.sampled_from(sorted({len(path) for path in paths})))
    return _replaced(document, draw(st.sampled_from([path for path in paths if len(path) == depth])), draw(JSON))


@st.composite
def manifest_files(draw) -> bytes:
    kind = draw(st.sampled_from(["field", "json", "bytes"]))
    if kind == "field":         # the recorded manifest with one field, at any depth, of any JSON value
        return json.dumps(_field_replaced(draw, RECORDED_MANIFEST)).encode()
    return json.dumps(draw(JSON)).encode() if kind == "json" else draw(st.binary(max_size=256))


@st.composite
def iostat_files(draw) -> bytes:
    return _damaged(draw, IOSTAT_TEXT)


def _fuzz_run(root: Path, file: str, content: bytes) -> tuple[Path, dict]:
    """A small run (manifest, one iostat report) with `file` replaced; tables and report built in this process."""
    run = root / "run"
    (run / "raw" / "vm" / "iostat" / "w").mkdir(parents=True, exist_ok=True)
    shutil.copy(RECORDED_RUN / "manifest.json", run / "manifest.json")
    shutil.copy(TOOLS / "iostat" / "iostat-killed.json", run / "raw" / "vm" / "iostat" / "w" / "iostat.json")
    plant(run / file, content)
    tables = build_tables(run)
    assert set(tables) == set(TABLE_NAMES)
    write_report(run)           # writes the tables first: every one must be writable as Parquet
    return run, tables


@settings(max_examples=15, deadline=None, database=None)
@given(content=manifest_files())
def test_fuzzed_manifests_are_recorded_never_fatal(content):
    with tempfile.TemporaryDirectory() as root:
        _run, tables = _fuzz_run(Path(root), "manifest.json", content)
        rows = tables["sources"].query("source == 'manifest'")
        assert list(rows["status"]) in ([], ["error"], ["malformed"], ["refused"])
        try:
            document = json.loads(content)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            assert list(rows["status"]) in (["error"], ["refused"]), rows


@settings(max_examples=15, deadline=None, database=None)
@given(content=iostat_files())
def test_fuzzed_iostat_reports_are_recorded_never_fatal(content):
    with tempfile.TemporaryDirectory() as root:
        _run, tables = _fuzz_run(Path(root), "raw/vm/iostat/w/iostat.json", content)
        entry = row(tables["sources"], "vm/iostat/w/iostat.json")
        assert entry["status"] in ("ok", "error", "refused")
        if entry["status"] == "ok":      # only what starts as sysstat's document is one
            assert content.lstrip().startswith(b'{"sysstat"'), entry
        assert entry["rows"] == len(tables["iostat"])


# Every other source a run holds, as recorded (the event log shortened), at the path a bench fetches it to.
OTHER_SOURCES = {
    "raw/vm/workload/w/fio-tmp-read-4k.json": (TOOLS / "fio-sweep" / "fio-tmp-read-4k.json").read_text(),
    "raw/prometheus/w.json": (TOOLS / "prometheus" / "fio-vda.json").read_text(),
    "raw/vm/eventlog/w/eventlogs/local-1": EVENT_LOG.read_text()[:60_000],
    "raw/vm/storage.json": json.dumps({"backends": {"hdd": {"device": "vda"}}}),
    "raw/vm/pfs-client/w/client-pfs.start": (FIXTURES / "pfs-client" / "worker1-client-pfs.start").read_text(),
    "raw/vm/pfs-client/w/client-pfs.stop": (FIXTURES / "pfs-client" / "worker1-client-pfs.stop").read_text(),
    "raw/st1/gluster-profile/w/profile-pfs.xml": (FIXTURES / "gluster-profile" / "profile-pfs.xml").read_text(),
}


@st.composite
def other_source_files(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(OTHER_SOURCES)))
    return name, _damaged(draw, OTHER_SOURCES[name])


@settings(max_examples=15, deadline=None, database=None)
@given(damaged=other_source_files())
def test_fuzzed_other_sources_are_recorded_never_fatal(damaged):
    """Beside the damaged file, the recorded one of another workload: its rows mix with whatever the damaged file
    gave, and must still be there."""
    name, content = damaged
    good = name.replace("/w/", "/good/").replace("/w.json", "/good.json")
    with tempfile.TemporaryDirectory() as root:
        for path in {name, good}:
            for pair in {path, path.replace(".stop", ".start"), path.replace(".start", ".stop")} - {name}:
                plant(Path(root) / "run" / pair, OTHER_SOURCES[pair.replace("/good/", "/w/").replace("/good.json", "/w.json")])
        _run, tables = _fuzz_run(Path(root), name, content)
        sources = tables["sources"]
        assert set(sources["status"]) <= {"ok", "error", "refused", "none", "missing"}
        if good != name:
            file = good if good.startswith("raw/prometheus") else good[len("raw/"):]
            if file.endswith(".start"):
                file = file.replace(".start", ".stop")          # a snapshot pair's row names its stop file
            assert row(sources, file)["status"] == "ok", sources
