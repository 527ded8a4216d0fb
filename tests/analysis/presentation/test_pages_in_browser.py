"""The report and the comparison page as a person gets them: rendered from recorded runs (tests/fixtures/runs: the
default bench's run; TeraSort's placement matrix and TeraSort on the emulated hdd and nvme, whose tables hold their
block traces) and opened in Debian's headless Chromium, offline.
One browser for the module (headless_chromium: the DevTools protocol over a pipe). A missing browser fails."""
import re
import shutil

import pytest

from analysis.compare_page import write_comparison
from analysis.report_page import write_report
from analysis.formatting import exact_size
from conftest import FIXTURES, block_counts_by_hand, copy_recorded_run
from headless_chromium import BrowserError, HeadlessChromium

RUNS = FIXTURES / "runs"
SECONDS = {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}


TRACED = ("terasort-hdd", "terasort-nvme", "terasort-matrix")     # recorded runs whose tables hold block traces


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    if not (RUNS / "bench-tiny" / "manifest.json").exists():
        pytest.fail("missing recorded run tests/fixtures/runs/bench-tiny", pytrace=False)
    shutil.copytree(RUNS / "bench-tiny", folder / "bench-tiny")
    traced = [copy_recorded_run(name, folder) for name in TRACED]      # fails on a missing recording
    return {"report": write_report(folder / "bench-tiny"), "traced report": write_report(folder / "terasort-matrix"),
            "compare": write_comparison([str(run) for run in traced], folder / "compare")}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        chromium = HeadlessChromium(tmp_path_factory.mktemp("chromium-profile"))
    except BrowserError as error:
        pytest.fail(str(error), pytrace=False)
    yield chromium
    chromium.close()


def _column(browser, table_js: str, header: str) -> list[str]:
    return browser.evaluate(f"""(() => {{ const t = {table_js};
        const i = Array.from(t.rows[0].cells).findIndex(c => c.textContent.trim() === {header!r});
        return Array.from(t.rows).slice(1).map(r => r.cells[i].textContent.trim()); }})()""")


def _seconds(text: str):
    match = re.fullmatch(r"([\d,]+(?:\.\d+)?) (ms|s|min|h)", text)
    return float(match.group(1).replace(",", "")) * SECONDS[match.group(2)] if match else None


@pytest.mark.parametrize("page", ["report", "traced report", "compare"])
def test_the_page_opens_offline_without_errors_and_the_findings_on_its_first_screen(browser, pages, page):
    browser.open(pages[page])
    assert browser.problems() == []
    # nothing but the page itself was requested (figures are inline data), and every figure was drawn
    requested = browser.requested_urls()
    assert [url for url in requested if not url.startswith("data:image/png;base64,")] == [pages[page].resolve().as_uri()]
    assert browser.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    assert browser.evaluate("navigator.onLine") is False
    first_screen = browser.evaluate("""(() => { const h = document.getElementById('findings');
        const after = h.nextElementSibling.getBoundingClientRect();
        return [h.getBoundingClientRect().top, after.bottom, window.innerHeight]; })()""")
    top, first_finding_bottom, height = first_screen
    assert 0 <= top and first_finding_bottom <= height, first_screen


def test_a_long_table_is_folded_and_opens_on_a_click(browser, pages):
    browser.open(pages["report"])
    folded = "document.querySelector('details.fold')"
    assert browser.evaluate(f"{folded}.open") is False
    assert browser.evaluate(f"{folded}.querySelector('table').checkVisibility()") is False
    assert browser.evaluate(f"{folded}.querySelector('table').rows.length") > 12
    browser.evaluate(f"{folded}.querySelector('summary').click()")
    assert browser.evaluate(f"{folded}.open") is True
    assert browser.evaluate(f"{folded}.querySelector('table').checkVisibility()") is True
    assert browser.evaluate(f"{folded}.querySelector('table').getBoundingClientRect().height") > 100
    assert browser.problems() == []


def test_sorting_orders_a_column_by_its_values_with_their_units(browser, pages):
    browser.open(pages["report"])
    steps = "document.querySelector('#steps ~ details table, #steps ~ table')"
    before = _column(browser, steps, "duration")
    browser.evaluate(f"Array.from({steps}.rows[0].cells).find(c => c.textContent.trim() === 'duration').click()")
    ascending = [_seconds(t) for t in _column(browser, steps, "duration")]
    numbers = [v for v in ascending if v is not None]
    assert numbers == sorted(numbers) and len(numbers) > 12 and numbers != [_seconds(t) for t in before if _seconds(t)]
    assert ascending[:len(numbers)] == numbers              # a missing value ("-") sorts last
    browser.evaluate(f"Array.from({steps}.rows[0].cells).find(c => c.textContent.trim() === 'duration').click()")
    descending = [v for v in map(_seconds, _column(browser, steps, "duration")) if v is not None]
    assert descending == sorted(numbers, reverse=True)
    # a column of words sorts as text
    browser.evaluate(f"Array.from({steps}.rows[0].cells).find(c => c.textContent.trim() === 'step').click()")
    names = _column(browser, steps, "step")
    assert names == sorted(names, key=str.casefold) or names == sorted(names)


def test_the_workload_filter_keeps_one_workloads_rows_in_every_table(browser, pages):
    browser.open(pages["report"])
    options = browser.evaluate("Array.from(document.querySelectorAll('#workload-filter option')).map(o => o.value)")
    assert options == ["", "fio-sweep", "gatk4", "kmeans", "terasort", "tpch"]
    visible_rows = """Array.from(document.querySelectorAll('table.sortable')).flatMap(t =>
        Array.from(t.rows).slice(1).filter(r => !r.classList.contains('filtered-out'))
        .map(r => Array.from(t.rows[0].cells).map((c, i) => [c.textContent.trim(), r.cells[i] ? r.cells[i].textContent.trim() : ''])))"""
    everything = browser.evaluate(visible_rows)
    browser.evaluate("(() => { const s = document.getElementById('workload-filter'); s.value = 'terasort';"
                     " s.dispatchEvent(new Event('change')); })()")
    shown = browser.evaluate(visible_rows)
    assert 0 < len(shown) < len(everything)
    workload_cells = [dict(row).get("workload", dict(row).get("workload run")) for row in shown]
    cells = [c for c in workload_cells if c is not None]
    assert cells and all(c.startswith("terasort") for c in cells), cells
    assert {"terasort-mapreduce", "terasort-spark", "terasort (engine=spark)"} <= set(cells)
    browser.evaluate("(() => { const s = document.getElementById('workload-filter'); s.value = '';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert len(browser.evaluate(visible_rows)) == len(everything)


def test_printing_opens_the_folded_tables(browser, pages):
    browser.open(pages["report"])
    table = "document.querySelector('details.fold table')"
    browser.send("Emulation.setEmulatedMedia", session=True, media="print")
    try:
        assert browser.evaluate(f"{table}.checkVisibility()") is True
        assert browser.evaluate(f"{table}.getBoundingClientRect().height") > 100
        assert browser.evaluate("getComputedStyle(document.querySelector('details.fold > summary')).display") == "none"
    finally:
        browser.send("Emulation.setEmulatedMedia", session=True, media="")
    assert browser.evaluate(f"{table}.checkVisibility()") is False     # folded again on the screen
    pdf = browser.send("Page.printToPDF", session=True, timeout=30)["data"]
    assert len(pdf) > 10_000


def _table_rows(browser, table_js: str) -> list[dict]:
    """The rows of a table as the page shows them, each {header: cell text}."""
    return browser.evaluate(f"""(() => {{ const t = {table_js};
        const names = Array.from(t.rows[0].cells).map(c => c.textContent.trim());
        return Array.from(t.rows).slice(1).map(r => Object.fromEntries(
            Array.from(r.cells).map((c, i) => [names[i], c.textContent.trim()]))); }})()""")


def _unfold(browser, table_js: str) -> None:
    """A long table is folded: hidden until its summary is clicked, then shown."""
    assert browser.evaluate(f"{table_js}.closest('details.fold').open") is False
    assert browser.evaluate(f"{table_js}.checkVisibility()") is False
    browser.evaluate(f"{table_js}.closest('details.fold').querySelector('summary').click()")
    assert browser.evaluate(f"{table_js}.checkVisibility()") is True
    assert browser.evaluate(f"{table_js}.getBoundingClientRect().height") > 100


def _share(text: str) -> tuple[float, int, int]:
    """`2.4 % (21 of 883)` -> (2.4, 21, 883)."""
    match = re.fullmatch(r"([\d.]+) % \(([\d,]+) of ([\d,]+)\)", text)
    assert match, text
    return float(match.group(1)), int(match.group(2).replace(",", "")), int(match.group(3).replace(",", ""))


def _assert_sizes(cells: list[str], counted: dict) -> None:
    """The ranked size cells hold the recorded trace's most common sizes with their requests and shares."""
    for cell, (size, count) in zip(cells, counted["sizes"]):
        assert cell == (f"{exact_size(size)}: {count:,} request{'s' * (count != 1)}, "
                        f"{100 * count / counted['requests']:.1f} %")


def test_a_traced_runs_report_shows_its_io_pattern_views_with_the_traces_numbers(browser, pages):
    browser.open(pages["traced report"])
    counted = block_counts_by_hand("terasort-matrix")
    workload_ids = sorted({key[0] for key in counted})
    assert len(workload_ids) == 4
    for workload_id in workload_ids:
        # what the workload's heading holds up to the next heading: its heat map and its two tables, no placeholder
        parts = f"""(() => {{ const out = []; let e = document.getElementById('io-pattern-{workload_id}').nextElementSibling;
            while (e && !/^H[23]$/.test(e.tagName)) {{ out.push(e); e = e.nextElementSibling; }} return out; }})()"""
        assert browser.evaluate(f"{parts}.filter(e => e.matches('.io-pattern-missing')).length") == 0
        assert browser.evaluate(f"{parts}.filter(e => e.tagName === 'FIGURE').map(f => f.querySelector('img'))"
                                ".every(i => i.complete && i.naturalWidth > 300 && i.checkVisibility())") is True
        tables = {}
        for kind in ("io-sizes", "io-sequential"):
            table = f"{parts}.map(e => e.matches('table.{kind}') ? e : e.querySelector('table.{kind}')).find(t => t)"
            if browser.evaluate(f"{table}.rows.length") > 13:
                _unfold(browser, table)
            assert browser.evaluate(f"{table}.checkVisibility()") is True
            tables[kind] = _table_rows(browser, table)
        mine = {(device, op): c for (w, device, op), c in counted.items() if w == workload_id}
        for (device, op), c in mine.items():
            shown = [r for r in tables["io-sizes"] if r["device (backend) on host"].startswith(device + " ")
                     and r["direction"] == op + "s"]
            assert [r["rank"] for r in shown] == [str(i) for i in range(1, min(len(c["sizes"]), 4) + 1)] + \
                (["rest"] if len(c["sizes"]) > 4 else [])
            for row, (size, count) in zip(shown[:4], c["sizes"]):
                assert row["request size"] == exact_size(size)
                assert row["requests (of the direction's)"] == f"{count:,} of {c['requests']:,}"
            if len(c["sizes"]) > 4:
                assert shown[-1]["request size"] == f"{len(c['sizes']) - 4:,} other sizes"
                assert shown[-1]["requests (of the direction's)"] == \
                    f"{sum(n for _, n in c['sizes'][4:]):,} of {c['requests']:,}"
            sequential = [r for r in tables["io-sequential"] if r["device (backend) on host"].startswith(device + " ")
                          and r["direction"] == op + "s"]
            assert len(sequential) == 1 and sequential[0]["requests"] == f"{c['requests']:,}"
            if c["requests"] > 1:
                assert _share(sequential[0]["sequential (of those with a predecessor)"])[1:] == \
                    (c["sequential"], c["requests"] - 1)
                assert _share(sequential[0]["random (of those with a predecessor)"])[1:] == \
                    (c["requests"] - 1 - c["sequential"], c["requests"] - 1)
    assert browser.problems() == []


def test_the_compare_page_sets_the_traced_runs_io_patterns_side_by_side(browser, pages):
    browser.open(pages["compare"])
    # a configuration is labelled by its cluster first: hdd and nvme (one placement each), local (the matrix)
    counted = {cluster: block_counts_by_hand(name) for cluster, name in
               (("hdd", "terasort-hdd"), ("nvme", "terasort-nvme"), ("local", "terasort-matrix"))}
    sizes, sequential = "document.querySelector('table.io-sizes')", "document.querySelector('table.io-sequential')"
    for table in (sizes, sequential):
        _unfold(browser, table)
    rows = _table_rows(browser, sizes)
    assert len(rows) == sum(len(c) for c in counted.values()) == 16     # every traced device and direction, once
    # one direction of the workload reads down the configurations: the reads of every run, then the writes
    assert [r["direction"] for r in rows] == ["reads"] * 8 + ["writes"] * 8
    assert [r["configuration"].split(" · ")[0] for r in rows[:3]] == ["hdd", "nvme", "local"]
    for row in rows:
        c = counted[row["configuration"].split(" · ")[0]][
            (row["workload run"], row["device (profile) on host"].split(" ")[0], row["direction"][:-1])]
        assert row["workload"] == "terasort" and row["requests"] == f"{c['requests']:,} request{'s' * (c['requests'] != 1)}"
        assert re.fullmatch(r"[\d.]+ (B|KiB|MiB)", row["bytes moved"])
        _assert_sizes([row[f"size {rank}"] for rank in range(1, 5)], c)
        assert all(row[f"size {rank}"] == "-" for rank in range(len(c["sizes"]) + 1, 5))
    shares = _table_rows(browser, sequential)
    assert len(shares) == 24                # reads, writes and both per traced device
    for row in shares:
        if row["direction"] == "reads and writes":
            continue
        c = counted[row["configuration"].split(" · ")[0]][
            (row["workload run"], row["device (profile) on host"].split(" ")[0], row["direction"][:-1])]
        assert row["requests"] == f"{c['requests']:,}"
        if c["requests"] > 1:
            assert _share(row["sequential (of those with a predecessor)"])[1:] == (c["sequential"], c["requests"] - 1)
            assert _share(row["random (of those with a predecessor)"])[1:] == \
                (c["requests"] - 1 - c["sequential"], c["requests"] - 1)
    # the requests column sorts by its values, their unit read
    browser.evaluate(f"Array.from({sizes}.rows[0].cells).find(c => c.textContent.trim() === 'requests').click()")
    ascending = [int(r["requests"].split()[0].replace(",", "")) for r in _table_rows(browser, sizes)]
    assert ascending == sorted(ascending) and ascending[0] < ascending[-1]
    assert browser.problems() == []


def test_the_compare_page_folds_a_heat_map_per_configuration_that_opens_offline(browser, pages):
    browser.open(pages["compare"])
    counted = {name: block_counts_by_hand(name) for name in TRACED}
    requests = {}          # (workload run, direction) -> reads or writes that moved data, every device of its run
    for name, counts in counted.items():
        for (workload_id, _device, op), c in counts.items():
            key = (name.split("-")[-1] if name != "terasort-matrix" else "local", workload_id, op)
            requests[key] = requests.get(key, 0) + c["requests"]
    folded = "document.querySelector('#io-pattern-heatmap ~ details.io-heatmap')"
    images = f"Array.from({folded}.querySelectorAll('figure img'))"
    assert browser.evaluate(f"{folded}.querySelector('summary').textContent.replace(/\\s+/g, ' ')") == \
        "Show the heat maps of terasort (6 configurations)"
    # folded: the six heat maps (hdd, nvme and the matrix's four placements) are there, none shown
    assert browser.evaluate(f"{folded}.open") is False
    assert browser.evaluate(f"{images}.length") == 6
    assert browser.evaluate(f"{images}.some(i => i.checkVisibility())") is False
    browser.evaluate(f"{folded}.querySelector('summary').click()")
    assert browser.evaluate(f"{folded}.open") is True
    assert browser.evaluate(f"{images}.every(i => i.complete && i.naturalWidth > 300 && i.checkVisibility())") is True
    assert browser.evaluate(f"{images}[0].getBoundingClientRect().height") > 100
    captions = browser.evaluate(f"Array.from({folded}.querySelectorAll('figcaption'))"
                                ".map(c => c.textContent.replace(/\\s+/g, ' '))")
    assert [c.split(": run ")[0].split(" · ")[0] for c in captions] == \
        ["terasort, configuration hdd", "terasort, configuration nvme"] + ["terasort, configuration local"] * 4
    for caption in captions:
        match = re.search(r"configuration (\w+).*? workload run ([\w-]+).*?reads: ([\d,]+) requests, [\d.]+ [KM]iB, "
                          r"writes: ([\d,]+) requests, [\d.]+ [KM]iB", caption)
        assert match, caption
        config, workload_id, reads, writes = match.groups()
        assert (int(reads.replace(",", "")), int(writes.replace(",", ""))) == \
            (requests[(config, workload_id, "read")], requests[(config, workload_id, "write")])
        assert re.search(r"per [\d.]+ s bin, MiB \(220 bytes\) on a logarithmic colour scale", caption), caption
    # opening it fetched nothing: the heat maps are inline data like every other figure
    assert [url for url in browser.requested_urls() if not url.startswith("data:image/png;base64,")] == \
        [pages["compare"].resolve().as_uri()]
    assert browser.problems() == []
