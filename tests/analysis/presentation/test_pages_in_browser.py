"""The report and the comparison page as a person gets them: rendered from recorded runs (tests/fixtures/runs: the
default bench's run, and TeraSort on the emulated hdd and nvme) and opened in Debian's headless Chromium, offline.
One browser for the module (headless_chromium: the DevTools protocol over a pipe). A missing browser fails."""
import re
import shutil

import pytest

from analysis.compare import write_comparison
from analysis.report import write_report
from conftest import FIXTURES
from headless_chromium import BrowserError, HeadlessChromium

RUNS = FIXTURES / "runs"
SECONDS = {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    for name in ("bench-tiny", "terasort-hdd", "terasort-nvme"):
        if not (RUNS / name / "manifest.json").exists():
            pytest.fail(f"missing recorded run tests/fixtures/runs/{name}", pytrace=False)
        shutil.copytree(RUNS / name, folder / name)
    return {"report": write_report(folder / "bench-tiny"),
            "compare": write_comparison([str(folder / "terasort-hdd"), str(folder / "terasort-nvme")],
                                        folder / "compare")}


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


@pytest.mark.parametrize("page", ["report", "compare"])
def test_the_page_opens_offline_without_errors_and_the_findings_on_its_first_screen(browser, pages, page):
    browser.open(pages[page])
    assert browser.problems() == []
    # nothing but the page itself was requested (figures are inline data), and every figure was drawn
    assert browser.requested_urls() == [pages[page].resolve().as_uri()]
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
