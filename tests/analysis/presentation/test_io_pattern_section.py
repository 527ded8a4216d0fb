"""The report's "I/O pattern" section (Darshan-style views per workload run): the heat map of bytes over time with
the stages (figures.heatmaps.heatmap_figures), the common access sizes and sequential shares as rows
(rows.io_patterns), and the section of report.html, from recorded runs (tests/fixtures/runs/terasort-matrix; the
assembled run of conftest: fio-sweep traced, spark-tiny not); and the same views side by side on the comparison page (terasort-hdd against
terasort-nvme), heat maps of bytes over time among them, checked against counts made here by hand from the recorded
block traces."""
from __future__ import annotations

import importlib
import re
import shutil
from html import unescape
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis import access_patterns, devices, metrics
from analysis.across_runs.configurations import measured_configurations
from analysis.across_runs.io_patterns import io_heatmap
from analysis.across_runs.times import workload_times
from analysis.compare_page import load_runs, write_comparison
from analysis.formatting import exact_size
from analysis.presentation.figures.heatmaps import heatmap_figures, heatmap_figures_across
from analysis.presentation.figures.layout import RunView
from analysis.presentation.rows.io_patterns import io_pattern_sections
from analysis.report_page import write_report
from analysis.tables import read_table, read_tables
from conftest import TOOLS, block_counts_by_hand, copy_recorded_run, heatmap_bins_by_hand

MATRIX = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "terasort-matrix"
BACKENDS = {("localhost", "loop1"): "hdd", ("localhost", "loop3"): "ssd"}
WORKLOAD = "terasort-hdfs_hdd-local_ssd"


def matrix(name: str):
    path = MATRIX / "tables" / f"{name}.parquet"
    if not path.exists():
        pytest.fail(f"missing recorded fixture {path}", pytrace=False)
    return read_table(path)


# every module that encodes a figure (layout.png, imported by each family): patched to keep the figure
FIGURE_MODULES = [importlib.import_module(f"analysis.presentation.figures.{family}")
                  for family in ("block_requests", "configurations", "fio", "heatmaps", "layout", "throughput")]


@pytest.fixture
def drawn(monkeypatch):
    for family in FIGURE_MODULES:
        monkeypatch.setattr(family, "png", lambda fig: fig)
    yield
    plt.close("all")


def test_the_heat_map_draws_every_byte_per_device_with_the_stage_spans(drawn):
    requests = matrix("block_requests")
    spans = metrics.phase_spans(matrix("stages"), matrix("mr_jobs"))
    drawn_figures = {f["workload_id"]: f for f in heatmap_figures(requests, spans, BACKENDS, "run-m")}
    assert set(drawn_figures) == set(requests["workload_id"])
    fig = drawn_figures[WORKLOAD]["png"]
    read_ax, write_ax = fig.axes[:2]
    data = metrics.data_requests(requests)
    data = data[data["workload_id"] == WORKLOAD]
    marks = spans[spans["workload_id"] == WORKLOAD]
    for ax, op in ((read_ax, "read"), (write_ax, "write")):
        assert [t.get_text() for t in ax.get_yticklabels()] == ["loop1 (hdd) on localhost", "loop3 (ssd) on localhost"]
        mesh = ax.collections[0]
        assert mesh.get_array().sum() * 2**20 == pytest.approx(data.loc[data["op"] == op, "bytes"].sum())
        assert len(ax.patches) == len(marks) > 0                 # one shaded span per stage attempt / MR phase
    assert "MiB per 0.5 s bin" in fig.axes[-1].get_ylabel()        # the colour bar, its unit and bin
    assert drawn_figures[WORKLOAD]["bin"] == "0.5 s"


def test_the_rows_carry_units_and_add_up_to_the_direction_totals():
    requests = matrix("block_requests")
    sizes = access_patterns.common_access_sizes(requests)
    shares = access_patterns.sequential_share(requests)
    sections = io_pattern_sections([WORKLOAD, "not-traced"], [{"workload_id": WORKLOAD, "png": ""}], sizes,
                                        shares, BACKENDS, matrix("sources"))
    traced, missing = sections
    data = metrics.data_requests(requests)
    data = data[(data["workload_id"] == WORKLOAD) & (data["device"] == "loop1") & (data["op"] == "read")]
    reads = [r for r in traced["size_rows"] if r["device"] == "loop1 (hdd) on localhost" and r["op"] == "reads"]
    assert [r["rank"] for r in reads] == ["1", "2", "3", "4", "rest"]
    assert all(r["requests"].endswith(f"of {len(data):,}") for r in reads)
    assert sum(int(r["requests"].split(" of ")[0].replace(",", "")) for r in reads) == len(data)
    top = data["bytes"].value_counts()
    assert reads[0]["size"] == "8 KiB" and top.idxmax() == 8192
    # a size reads as its label where that is exact, else with its bytes
    assert [exact_size(s) for s in (512, 8192, 1310720, 1049600)] == \
        ["512 B", "8 KiB", "1.25 MiB", "1.00098 MiB (1,049,600 B)"]
    assert re.fullmatch(r"[\d,]+ other sizes", reads[-1]["size"])
    assert all(re.fullmatch(r"[\d.]+ %", r["share"]) and re.fullmatch(r"[\d.]+ (B|KiB|MiB|GiB)", r["bytes"])
               for r in traced["size_rows"])
    sequential = {(r["device"], r["op"]): r for r in traced["sequential_rows"]}
    lone = sequential[("loop3 (ssd) on localhost", "reads")]     # a single read: nothing to compare it with
    assert lone["sequential"] == "- (no request had a predecessor)" and lone["first"] == "1"
    assert re.fullmatch(r"[\d.]+ % \([\d,]+ of [\d,]+\)", sequential[("loop1 (hdd) on localhost", "reads")]["sequential"])
    assert traced["missing"] == "" and missing["size_rows"] == [] and missing["heatmap"] is None
    assert missing["missing"].startswith("No block trace was recorded for not-traced")


def _section(html: str) -> str:
    return html[html.index('id="io-pattern"'):html.index('id="emulation"')]


def test_the_report_shows_the_three_views_of_a_traced_workload_and_what_misses_for_the_others(run_dir):
    # spark-tiny's trace is a file that is no block trace (iostat's JSON): the tables record it as an error
    target = run_dir / "raw" / "vm" / "blocktrace" / "spark-tiny"
    target.mkdir(parents=True)
    shutil.copy(TOOLS / "iostat" / "iostat-killed.json", target / "blocktrace.tsv")
    section = _section(write_report(run_dir).read_text())
    tables = read_tables(run_dir)
    traced = section[section.index('id="io-pattern-fio-sweep"'):section.index('id="io-pattern-spark-tiny"')]
    assert re.search(r'<img alt="I/O heat map during fio-sweep, run [^"]+" src="data:image/png;base64,[A-Za-z0-9+/=]{100,}',
                     traced)
    data = metrics.data_requests(tables["block_requests"])
    for op in ("read", "write"):
        count = int((data["op"] == op).sum())
        assert f"{op}s: {count:,} requests" in traced                         # the heat map's caption
        assert re.search(rf"<td>{op}s</td><td>1</td><td class=\"num\">[\d.]+ (B|KiB|MiB)( \([\d,]+ B\))?</td>\s*"
                         rf"<td class=\"num\">[\d,]+ of {count:,}</td>", traced)  # the most common size of each
        assert re.search(rf"<td>{op}s</td><td class=\"num\">{count:,}</td>\s*<td class=\"num\">1</td>"
                         r"<td class=\"num\">[\d.]+ % \([\d,]+ of [\d,]+\)</td>", traced)
    untraced = unescape(section[section.index('id="io-pattern-spark-tiny"'):])
    assert "The block trace of spark-tiny could not be used (vm: error" in untraced
    assert "no heat map, no access sizes and no sequential share" in untraced
    assert "<img" not in untraced.split("<p class=\"muted\">Run ")[0]


def test_the_comparison_sets_each_workloads_io_pattern_side_by_side(tmp_path):
    runs = [copy_recorded_run(name, tmp_path) for name in ("terasort-hdd", "terasort-nvme")]
    page = write_comparison([str(r) for r in runs], tmp_path / "cmp")
    html = page.read_text()
    section = html[html.index('id="io-pattern"'):html.index('id="request-sizes"')]
    by_run = {"hdd": block_counts_by_hand("terasort-hdd"), "nvme": block_counts_by_hand("terasort-nvme")}
    size_rows = re.findall(r"<tr><td>terasort</td><td>(reads|writes)</td><td>(hdd|nvme)</td><td>terasort</td>"
                           r"<td>loop1 \((hdd|nvme)\) on localhost</td>\s*<td class=\"num\">([\d,]+) requests</td>"
                           r"<td class=\"num\">[\d.]+ (?:KiB|MiB)</td>\s*((?:<td class=\"num\">.*?</td>){5})</tr>",
                           section.split('id="io-pattern-sequential"')[0])
    # reads first, then writes; in each, the baseline (hdd) before nvme: one direction reads down the runs
    assert [(op, config) for op, config, *_ in size_rows] == [("reads", "hdd"), ("reads", "nvme"),
                                                              ("writes", "hdd"), ("writes", "nvme")]
    for op, config, profile, requests, cells in size_rows:
        counted = by_run[config][("terasort", "loop1", op[:-1])]
        assert profile == config and int(requests.replace(",", "")) == counted["requests"]
        cells = [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r'<td class="num">(.*?)</td>', cells)]
        for cell, (size, count) in zip(cells[:4], counted["sizes"]):
            share = f"{100 * count / counted['requests']:.1f} %"
            assert cell == f"{exact_size(size)}: {count:,} request{'s' * (count != 1)}, {share}", cell
        rest = counted["sizes"][4:]
        rest_count = sum(c for _, c in rest)
        assert cells[4] == (f"{len(rest)} other sizes: {rest_count:,} request{'s' * (rest_count != 1)}, "
                            f"{100 * sum(c for _, c in rest) / counted['requests']:.1f} %")
    sequential = re.findall(r"<tr><td>terasort</td><td>(reads|writes)</td><td>(hdd|nvme)</td><td>terasort</td>"
                            r"<td>loop1 \(\w+\) on localhost</td>\s*<td class=\"num\">([\d,]+)</td><td class=\"num\">1</td>"
                            r"<td class=\"num\">([\d.]+) % \(([\d,]+) of ([\d,]+)\)</td>"
                            r"<td class=\"num\">([\d.]+) % \(([\d,]+) of ([\d,]+)\)</td>", section)
    assert len(sequential) == 4
    for op, config, requests, pct, count, decided, random_pct, random, decided_too in sequential:
        counted = by_run[config][("terasort", "loop1", op[:-1])]
        assert int(requests) == counted["requests"] and int(decided) == int(decided_too) == counted["requests"] - 1
        assert int(count) == counted["sequential"] and int(random) == counted["requests"] - 1 - counted["sequential"]
        assert pct == f"{100 * counted['sequential'] / (counted['requests'] - 1):.1f}"
        assert float(pct) + float(random_pct) == pytest.approx(100, abs=0.11)
    # the tables written beside the page: every direction's rows add up to its requests
    sizes = read_table(page.parent / "tables" / "compare_access_sizes.parquet")
    totals = sizes.groupby(["configuration", "op"])["requests"].sum().to_dict()
    assert totals == {(config, op): by_run[config][("terasort", "loop1", op)]["requests"]
                      for config in ("hdd", "nvme") for op in ("read", "write")}
    shares = read_table(page.parent / "tables" / "compare_sequential.parquet")
    assert set(shares["op"]) == {"read", "write", "all"} and set(shares["profile"]) == {"hdd", "nvme"}
    # the heat maps: one per configuration, folded, each caption with the trace's requests; their bins beside the page
    heatmaps = section[section.index('id="io-pattern-heatmap"'):section.index('id="io-pattern-sizes"')]
    assert re.search(r'<details class="fold io-heatmap"[^>]*><summary>Show the heat maps of terasort\s+'
                     r'\(2 configurations\)</summary>', heatmaps)
    captions = re.findall(r'<img alt="I/O heat map during terasort \((hdd|nvme)\), run [^"]+, of the comparison of '
                          r'runs [^"]+" '
                          r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}">\s*<figcaption>(.*?)</figcaption>',
                          heatmaps, re.S)
    assert [config for config, _ in captions] == ["hdd", "nvme"]
    for config, caption in captions:
        counted = by_run[config]
        moved = ", ".join(f"{op}s: {counted[('terasort', 'loop1', op)]['requests']:,} requests" for op in ("read", "write"))
        assert re.sub(r", [\d.]+ (?:KiB|MiB)", "", " ".join(caption.split())).count(moved) == 1, caption
        assert "MiB (2<sup>20</sup> bytes) on a logarithmic colour scale" in caption
    for suffix in ("csv", "parquet"):
        assert (page.parent / "tables" / f"compare_heatmap.{suffix}").stat().st_size > 0
    heatmap = read_table(page.parent / "tables" / "compare_heatmap.parquet")
    assert heatmap.groupby(["configuration", "op"])["requests"].sum().to_dict() == \
        {(config, op): by_run[config][("terasort", "loop1", op)]["requests"] for config in ("hdd", "nvme")
         for op in ("read", "write")}


def test_the_comparisons_heat_maps_draw_each_configurations_bins_as_counted_by_hand(tmp_path, drawn):
    runs = load_runs([str(copy_recorded_run(name, tmp_path)) for name in ("terasort-hdd", "terasort-nvme")])
    _, order = workload_times(runs)
    table = io_heatmap(runs, measured_configurations(runs), order)
    by_hand = {"hdd": heatmap_bins_by_hand("terasort-hdd")["terasort"],
               "nvme": heatmap_bins_by_hand("terasort-nvme")["terasort"]}
    views = [RunView(r.run_id, r.label, r.tables, metrics.phase_spans(r.tables["stages"], r.tables["mr_jobs"]),
                     devices.device_labels(r.tables["devices"])) for r in runs]
    (section,) = heatmap_figures_across(table, views)
    assert (section["workload"], section["sweep"]) == ("terasort", "")
    assert [f["configuration"] for f in section["figures"]] == order == ["hdd", "nvme"]
    for run, drawn_figure in zip(runs, section["figures"]):
        config = drawn_figure["configuration"]
        counted, width = by_hand[config]["bins"], by_hand[config]["bin_s"]
        # the table: every bin of the trace, as counted by hand
        mine = table[table["configuration"] == config]
        assert set(mine["bin_s"]) == {width} and set(mine["profile"]) == {config} and set(mine["run_id"]) == {run.run_id}
        assert {(r.host, r.device, r.op, round((r.bin_start_s - by_hand[config]["origin"]) / width)): [r.requests, r.bytes]
                for r in mine.itertuples()} == counted
        # the figure: the same bytes in the same cells, MiB on the colour bar, seconds on the time axis
        fig = drawn_figure["png"]
        first = min(key[3] for key in counted)
        marks = metrics.phase_spans(run.tables["stages"], run.tables["mr_jobs"])
        for ax, op in zip(fig.axes[:2], ("read", "write")):
            assert [t.get_text() for t in ax.get_yticklabels()] == [f"loop1 ({config}) on localhost"]
            cells = np.ma.filled(ax.collections[0].get_array(), 0).reshape(1, -1) * 2**20
            expected = np.zeros_like(cells)
            for (_, _, bin_op, index), (_, size) in counted.items():
                if bin_op == op:
                    expected[0, index - first] = size
            assert cells == pytest.approx(expected)
            assert len(ax.patches) == len(marks[marks["workload_id"] == "terasort"]) > 0
        assert fig.axes[1].get_xlabel().endswith("(s)")
        assert fig.axes[-1].get_ylabel() == f"MiB per {width:g} s bin (log scale)"
        assert drawn_figure["repetitions"] == 1 and drawn_figure["workload_id"] == "terasort"


def test_a_comparison_without_block_traces_says_so(tmp_path):
    runs = [copy_recorded_run(name, tmp_path) for name in ("terasort-hdd", "terasort-nvme")]
    for run in runs:            # as the analysis writes a table no source filled
        pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / "block_requests.parquet")
    html = write_comparison([str(r) for r in runs], tmp_path / "cmp").read_text()
    section = html[html.index('id="io-pattern"'):html.index('id="request-sizes"')]
    assert "No measured workload run of these runs has a block trace" in section
    assert "there is no heat map of bytes over time to\ncompare" in section
    assert "<table" not in section and "<img" not in section and "<details" not in section
