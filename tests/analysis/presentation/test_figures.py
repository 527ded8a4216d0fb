"""The pages' figures drawn from recorded runs' tables (tests/fixtures/runs/*/tables): what each figure puts on
its axes. `png` is swapped for the identity so that a figure function hands back the matplotlib figure it drew."""
from __future__ import annotations

import base64
import importlib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.formatting import size_label
from analysis.presentation.figures.block_requests import (offset_figures, offset_figures_across, request_size_figures,
                                                          request_size_figures_across)
from analysis.presentation.figures.configurations import configuration_bars
from analysis.presentation.figures.fio import fio_curves_figure, fio_figure
from analysis.presentation.figures.layout import RunView, png, stamp
from analysis.presentation.figures.throughput import (backend_throughput_figure, throughput_figures,
                                                      throughput_figures_across)
from analysis.tables import build_tables, read_table

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
MATRIX = "terasort-matrix"          # four placements of TeraSort: block traces, iostat, stages, MR jobs
HDD_ONLY = "terasort-hdfs_hdd-local_hdd"


def table(run: str, name: str) -> pd.DataFrame:
    return read_table(RUNS / run / "tables" / f"{name}.parquet")


# every module that encodes a figure (layout.png, imported by each family): patched to keep the figure
FIGURE_MODULES = [importlib.import_module(f"analysis.presentation.figures.{family}")
                  for family in ("block_requests", "configurations", "fio", "heatmaps", "layout", "throughput")]


@pytest.fixture
def drawn(monkeypatch):
    """Figure functions return their matplotlib figures instead of PNG; closed after the test."""
    for family in FIGURE_MODULES:
        monkeypatch.setattr(family, "png", lambda fig: fig)
    yield
    plt.close("all")


def view(label: str) -> RunView:
    tables = {name: table(MATRIX, name) for name in ("block_requests", "iostat", "stages", "mr_jobs")}
    return RunView(f"run-{label}", label, tables, metrics.phase_spans(tables["stages"], tables["mr_jobs"]),
                   {("localhost", "loop1"): "loop1 (hdd)"})


def labels(ax) -> list[str]:
    """The labelled lines of `ax` (span boundaries are unlabelled lines)."""
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts]


def test_png_is_a_closed_png_and_the_stamp_names_the_runs():
    fig, _ = plt.subplots()
    stamp(fig, ["a"])
    assert [t.get_text() for t in fig.texts] == ["Spillway run a"]
    encoded = png(fig)
    assert base64.b64decode(encoded)[:8] == b"\x89PNG\r\n\x1a\n" and not plt.fignum_exists(fig.number)
    fig, _ = plt.subplots()
    stamp(fig, ["a", "b"])
    assert fig.texts[0].get_text() == "Spillway runs a, b"
    plt.close(fig)


def test_fio_figure_draws_each_data_path_per_pattern(drawn):
    curves = metrics.fio_curves(table("fio-sweep", "fio"))
    fig = fio_figure(curves, "r1")
    patterns = list(dict.fromkeys(curves["rw"]))
    assert len(fig.axes) == 2 * len(patterns)
    top = fig.axes[patterns.index("randread")]          # row 0: bandwidth
    assert labels(top) == ["hdd (localhost)", "ssd (localhost)"]
    hdd = curves[(curves["rw"] == "randread") & (curves["backend"] == "hdd")]
    np.testing.assert_allclose(top.get_lines()[0].get_ydata(), hdd["bandwidth_bytes_per_s"] / 1e6)
    assert [t.get_text() for t in top.get_xticklabels()] == [size_label(s) for s in sorted(set(curves["block_size_bytes"]))]
    assert "run r1" in fig._suptitle.get_text() and "Spillway run r1" in texts(fig)


def test_fio_curves_figure_adds_the_ratio_row_across_runs(drawn):
    curves = metrics.fio_curves(table("fio-sweep", "fio"))
    series = curves.assign(series=curves["backend"])
    base = series[series["series"] == "hdd"][["rw", "direction", "block_size_bytes", "bandwidth_bytes_per_s"]]
    ratios = series[series["series"] == "ssd"].merge(base, on=["rw", "direction", "block_size_bytes"],
                                                     suffixes=("", "_baseline"))
    ratios["bandwidth_ratio"] = ratios["bandwidth_bytes_per_s"] / ratios["bandwidth_bytes_per_s_baseline"]
    fig = fio_curves_figure(series, "title", ["a", "b"], ratios, "hdd")
    patterns = len(set(series["rw"]))
    assert len(fig.axes) == 3 * patterns
    ratio_axes = fig.axes[2 * patterns]
    assert labels(ratio_axes) == ["ssd / hdd"] and ratio_axes.get_ylabel().startswith("bandwidth ratio to hdd")
    assert fio_curves_figure(series.iloc[0:0], "title", ["a"]) is None


def test_request_size_figures_count_every_data_request_of_each_device(drawn):
    requests = table(MATRIX, "block_requests")
    made = request_size_figures(requests, "r1")
    assert [f["workload_id"] for f in made] == sorted(requests["workload_id"].unique())
    first = made[0]
    data = requests[(requests["workload_id"] == HDD_ONLY) & requests["op"].isin(["read", "write"])
                    & (requests["bytes"] > 0)]
    ax = first["png"].axes[0]
    assert ax.get_title() == "loop1 on localhost"
    assert sum(bar.get_height() for bar in ax.patches) == len(data)
    assert first["caption"] == f"read: {(data['op'] == 'read').sum():,} requests, " \
                               f"write: {(data['op'] == 'write').sum():,} requests"


def test_request_size_figures_across_runs_give_each_run_a_row(drawn):
    made = request_size_figures_across([view("hdd"), view("nvme")])
    fig = made[0]["png"]
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert titles == ["hdd: loop1 (hdd) on localhost", "nvme: loop1 (hdd) on localhost"]
    assert made[0]["runs"] == "run-hdd, run-nvme"


def test_offset_figures_plot_the_sampled_requests_with_their_backend(drawn):
    requests = table(MATRIX, "block_requests")
    made = offset_figures(requests, {("localhost", "loop1"): "hdd"}, "r1")
    hdd = made[0]
    offsets = metrics.request_offsets(requests)
    mine = offsets[offsets["workload_id"] == HDD_ONLY]
    ax = hdd["png"].axes[0]
    assert ax.get_title() == "loop1 (hdd) on localhost"
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(mine)
    assert hdd["caption"].startswith(f"{len(mine):,} of {len(mine):,} data requests plotted")
    assert {label.split(" ")[0] for label in (t.get_text() for t in ax.get_legend().get_texts())} == {"read", "write"}


def test_offset_figures_across_runs_start_each_run_at_its_first_request(drawn):
    made = offset_figures_across([view("hdd"), view("nvme")])
    axes = [ax for ax in made[1]["png"].axes if ax.axison]
    assert len(axes) == 4 and axes[2].get_title().startswith("nvme: ")
    assert min(min(c.get_offsets()[:, 0]) for c in axes[0].collections) == 0.0


def test_throughput_figures_draw_every_device_and_mark_stage_spans(drawn):
    iostat, stages, mr_jobs = table(MATRIX, "iostat"), table(MATRIX, "stages"), table(MATRIX, "mr_jobs")
    spans = metrics.phase_spans(stages, mr_jobs)
    made = throughput_figures(iostat, spans, "r1", metrics.stage_io_rate(stages))
    hdd = next(f for f in made if f["workload_id"] == HDD_ONLY)
    ax = hdd["png"].axes[0]
    assert labels(ax) == ["loop1@localhost read", "loop1@localhost write", "loop3@localhost read",
                          "loop3@localhost write"]
    marks = spans[spans["workload_id"] == HDD_ONLY]
    assert len([p for p in ax.patches]) == len(marks) and hdd["caption"] == f"{len(marks)} stage/phase spans marked"
    assert len(hdd["png"].axes) == 2      # the application I/O rate under it: Spark stages ran
    assert hdd["png"].axes[1].get_xlabel().startswith("time since ")


def test_throughput_figures_across_runs_leave_idle_devices_out(drawn):
    made = throughput_figures_across([view("hdd"), view("nvme")])
    fig = next(f for f in made if f["workload_id"] == HDD_ONLY)["png"]
    assert [ax.get_title() for ax in fig.axes] == ["hdd (run run-hdd)", "nvme (run run-nvme)"]
    assert labels(fig.axes[0]) == ["loop1 (hdd)@localhost read", "loop1 (hdd)@localhost write"]  # loop3 idle


def test_backend_throughput_figure_draws_each_backend_and_direction_and_shades_each_workload(drawn, archived_run):
    tables = build_tables(archived_run({"fio-vda": "ok", "fio-vda-again": "invalid"}))
    fig = backend_throughput_figure(metrics.backend_throughput(tables["prometheus_series"]),
                                            tables["workloads"], "run")
    ax = fig.axes[0]
    assert sorted(labels(ax)) == ["root read", "root write"]
    assert len(ax.get_lines()) == 4  # read and write of each workload's archive, not joined across windows
    assert [t.get_text().strip() for t in ax.texts] == ["fio-vda", "fio-vda-again"]
    assert len(ax.patches) == 2
    assert max(line.get_ydata().max() for line in ax.get_lines()) > 100  # MB/s: the recorded fio run
    assert "run run" in ax.get_title() and "Spillway run run" in texts(fig)
    assert backend_throughput_figure(metrics.backend_throughput(pd.DataFrame()), tables["workloads"],
                                             "run") is None


def test_configuration_bars_draw_one_bar_per_configuration_in_megabytes(drawn):
    throughput = pd.DataFrame({"workload": ["terasort", "terasort", "kmeans"], "sweep": ["", "", "k=2"],
                               "configuration": ["hdd", "nvme", "hdd"],
                               "cluster_bytes_per_s": [50e6, 200e6, 10e6]})
    fig = configuration_bars(throughput, "cluster_bytes_per_s", "MB/s", "title", ["a", "b"])
    ax = fig.axes[0]
    assert sorted(bar.get_height() for bar in ax.patches if not np.isnan(bar.get_height())) == [10, 50, 200]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["kmeans (k=2)", "terasort"]
