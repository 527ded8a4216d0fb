"""One HTML page comparing several run directories (typically the same workloads on other backends or
placements): side-by-side figures, speedup tables against a baseline, and what differed between the runs. The
runs' tables are loaded here; what is computed across them is analysis.across_runs, what is drawn
analysis.presentation."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import access_patterns, devices, gate, metrics, safeio, statistics
from .across_runs.configurations import measured_configurations
from .across_runs.differences import apples_and_oranges, differences
from .across_runs.fio import fio_ratios, fio_series
from .across_runs.io_patterns import io_heatmap, io_patterns
from .across_runs.runs import Run, key_by_effective_parameters, label_runs, placement_text
from .across_runs.times import stage_times, workload_times
from .across_runs.volumes import shuffle_per_application, throughput_table
from .formatting import number, now_utc
from .findings import diff as findings_diff, thresholds
from .findings.rules import RULES, run_time
from .models import sensitivity
from .models.iomodel.bandwidths import bandwidths_of
from .models.iomodel.configurations import configurations_of
from .parsers.manifest import load_manifest, workloads_table
from .presentation.figures.block_requests import offset_figures_across, request_size_figures_across
from .presentation.figures.configurations import configuration_bars
from .presentation.figures.fio import fio_curves_figure
from .presentation.figures.heatmaps import heatmap_figures_across
from .presentation.figures.layout import RunView
from .presentation.figures.throughput import throughput_figures_across
from .presentation.rows.compare_tables import fio_ratio_rows, gate_rows, io_rows, pivot_rows, shuffle_rows
from .presentation.rows.findings_section import findings_context
from .presentation.rows.io_patterns import compare_access_size_rows, compare_sequential_rows
from .presentation import findings_export, render_page
from .presentation.page_sections import section_failed, storage_sensitivity_section
from run_layout import FINDINGS, RESULTS_DIR, resolve_run_dir
from .tables import run_tables


class CompareError(ValueError):
    """Bad input for a comparison (too few runs, not a run directory)."""


def with_baseline_first(refs: list[str], baseline: str | None) -> list[str]:
    """RUNS with BASELINE first (the first run is the baseline of every verdict); a BASELINE not among RUNS is
    added. Refs are matched by the run directory they resolve to."""
    if baseline is None:
        return list(refs)
    try:
        baseline_dir = resolve_run_dir(baseline)
    except FileNotFoundError as error:
        raise CompareError(f"BASELINE={baseline!r} names no run ({error}): give BASELINE a run id under results/, a "
                           f"run directory or `latest`, usually one of RUNS") from None
    others = []
    for ref in refs:
        try:
            if resolve_run_dir(ref) == baseline_dir:
                continue
        except FileNotFoundError:
            pass                    # load_runs names it
        others.append(ref)
    return [baseline] + others


def load_runs(refs: list[str]) -> list[Run]:
    if len(refs) < 2:
        raise CompareError(f"compare needs at least 2 runs, got {len(refs)}: RUNS=\"<run-id> <run-id> ...\"")
    runs = []
    for ref in refs:
        try:
            run_dir = resolve_run_dir(ref)
        except FileNotFoundError as error:
            raise CompareError(str(error)) from None
        if not (run_dir / "manifest.json").exists():
            raise CompareError(f"{run_dir} has no manifest.json: not a run directory (nothing to compare by)")
        manifest = load_manifest(run_dir)
        tables = run_tables(run_dir)
        # Always from the manifest: tables written by an older analysis may lack newer columns (warmup...).
        tables["workloads"] = workloads_table(manifest)
        runs.append(Run(run_dir, manifest.get("run_id") or run_dir.name, manifest, tables))
    if len({r.run_dir for r in runs}) < len(runs):
        raise CompareError("the same run is named twice: compare distinct runs")
    for n, run in enumerate(runs):
        twin = next((r for r in runs[:n] if r.run_id == run.run_id), None)
        if twin is not None:  # every table, column and verdict of a comparison is keyed by the run's id
            raise CompareError(f"{twin.run_dir} and {run.run_dir} both have run_id '{run.run_id}' in their "
                               "manifest.json (a copy of one run?): a comparison tells runs apart by their ids; "
                               "compare distinct runs")
    label_runs(runs)
    key_by_effective_parameters(runs)
    return runs


# ---------------------------------------------------------------- the page

def used_noise(table: pd.DataFrame) -> statistics.Noise | None:
    """The noise level a comparison table's verdicts had to exceed (given, or measured on the runs' repetitions)."""
    if table.empty or "noise_pct" not in table or table["noise_pct"].isna().all():
        return None
    return statistics.Noise(float(table["noise_pct"].iloc[0]), str(table["noise_source"].iloc[0]))


def _page(runs: list[Run]) -> str:
    """How the warnings of a failed section name this page."""
    return f"comparison of {', '.join(r.run_id for r in runs)}"


def _failed(runs: list[Run], what: str, error: Exception) -> str:
    return section_failed(_page(runs), what, error, stacklevel=4)


def sensitivity_section(runs: list[Run]) -> dict:
    """Each workload's run step on every placement of the compared runs' backends, measured in any of them or
    predicted by the model fitted on all of them, with its error on these runs (models.sensitivity), as the page's
    rows and as findings.json's objects. Workload runs are matched as the rest of the page matches them
    (across_runs.runs.key_by_effective_parameters); a failure is shown."""
    def storage_sensitivity() -> pd.DataFrame:
        configs = [c for r in runs for c in configurations_of(r.run_id, r.manifest, r.tables)]
        keys = {(r.run_id, w.workload_id): w.sweep for r in runs for w in r.tables["workloads"].itertuples()}
        for config in configs:
            config.sweep = keys.get((config.run_id, config.workload_id), config.sweep)
        profiles = sorted({p for r in runs for p in devices.backend_profiles(r.tables["devices"]).values()})
        return sensitivity.storage_sensitivity(configs, profiles, bandwidths_of(
            [(r.run_dir.name, r.manifest, r.tables) for r in runs]))

    return storage_sensitivity_section(_page(runs), storage_sensitivity)


def io_pattern_section(runs: list[Run], measured: pd.DataFrame, order: list[str]
                       ) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The report's I/O pattern views side by side (across_runs.io_patterns): each workload's common access sizes
    and sequential shares per configuration and device, as the page's rows and as the tables written next to it;
    a failure is shown."""
    try:
        sizes, shares = io_patterns(runs, measured, order)
        section = {"size_rows": compare_access_size_rows(sizes),
                   "sequential_rows": compare_sequential_rows(shares),
                   "ranks": list(range(1, access_patterns.COMMON_SIZES + 1)), "error": ""}
        return section, sizes, shares
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        section = {"size_rows": [], "sequential_rows": [], "ranks": [],
                   "error": _failed(runs, "the I/O patterns", error)}
        return section, pd.DataFrame(), pd.DataFrame()


def heatmap_section(runs: list[Run], measured: pd.DataFrame, order: list[str], views: list[RunView]
                    ) -> tuple[dict, pd.DataFrame]:
    """The report's heat map of bytes over time side by side (across_runs.io_patterns.io_heatmap): per workload one heat map per
    configuration (heatmap_figures_across), and the table written next to the page; a failure is shown."""
    try:
        table = io_heatmap(runs, measured, order)
        return {"workloads": heatmap_figures_across(table, views), "error": ""}, table
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        return {"workloads": [], "error": _failed(runs, "the I/O heat maps", error)}, pd.DataFrame()


def overview_json(runs: list[Run]) -> dict:
    """findings.json's overview of a comparison: each run's measured workload runs as its own report's overview
    gives them (findings_export.overview_frames: each run modeled on its own bytes and its own fio sweep); a failure is
    said there."""
    try:
        records = [record for r in runs for record in findings_export.overview_records(
            r.run_id, *findings_export.overview_frames(r.tables, configurations_of(r.run_id, r.manifest, r.tables),
                                                bandwidths_of([(r.run_dir.name, r.manifest, r.tables)])))]
        return findings_export.section(records)
    except Exception as error:  # noqa: BLE001 - said in findings.json instead
        return findings_export.section(error=_failed(runs, "the overview", error))


def build_comparison(runs: list[Run], noise: statistics.Noise | None = None,
                     max_slowdown_pct: float | None = None, thresholds_file: Path | None = None,
                     overrides: dict | None = None) -> tuple[dict, dict[str, pd.DataFrame]]:
    """The page's context and the tables written next to it. `noise`: the host's run-to-run noise when measured
    (a calibration); else the statistics take the largest spread of the configurations the runs repeated.
    `max_slowdown_pct`: the regression gate's allowance, when the gate was asked for (else no gate). `overrides`:
    the rules' thresholds read from `thresholds_file` (findings.thresholds)."""
    workloads, order = workload_times(runs, noise)
    stages = stage_times(runs, order, noise)
    noise = used_noise(workloads) or noise
    statuses, found = run_time.evaluate_comparison(thresholds.apply(RULES, overrides or {}),
                                                   [(r.label, r.tables) for r in runs], workloads, noise)
    against_baseline = findings_diff.findings_diff(found, runs[0].label, [r.label for r in runs[1:]])
    series = fio_series(runs)
    ratios, fio_baseline = fio_ratios(series, runs)
    throughput = throughput_table(runs, order)
    shuffle = shuffle_per_application(runs)
    differed, agreed = differences(runs)
    measured = measured_configurations(runs)
    patterns, sizes, shares = io_pattern_section(runs, measured, order)
    views = [RunView(r.run_id, r.label, r.tables, metrics.phase_spans(r.tables["stages"], r.tables["mr_jobs"]),
                     devices.device_labels(r.tables["devices"])) for r in runs]
    heatmaps, heatmap = heatmap_section(runs, measured, order, views)
    stage_keys = ["workload", "sweep", "app", "stage_id", "name"]
    stage_order = list(stages["configuration"].cat.categories) if not stages.empty else []
    # a stage seen in one configuration only has nothing to be compared with (it stays in the CSV)
    shared_stages = stages[stages.groupby(stage_keys, dropna=False)["configuration"].transform("nunique") > 1] \
        if not stages.empty else stages
    tables = {"compare_workloads": workloads, "compare_stages": stages, "compare_fio": series,
              "compare_fio_ratio": ratios, "compare_throughput": throughput, "compare_shuffle": shuffle,
              "compare_differences": differed, "compare_findings": found, "compare_findings_diff": against_baseline,
              "compare_access_sizes": sizes,
              "compare_sequential": shares, "compare_heatmap": heatmap}
    if max_slowdown_pct is not None:
        tables["compare_gate"] = gate.verdicts(workloads, stages, max_slowdown_pct)
    run_ids = [r.run_id for r in runs]
    storage_sensitivity = sensitivity_section(runs)
    excluded = [f"{r.run_id}: {w.workload_id} ({'warm-up' if w.warmup else w.status})"
                for r in runs for w in r.tables["workloads"].itertuples() if w.warmup or w.status != "ok"]
    context = {
        "gate": gate_context(tables.get("compare_gate"), max_slowdown_pct),
        "findings": findings_context(statuses, found, noise, f"{FINDINGS}, tables/compare_findings.parquet"),
        "findings_diff": {"baseline": runs[0].label, "rows": against_baseline.to_dict("records")},
        "sensitivity": storage_sensitivity,
        "findings_json": findings_export.as_json(" vs ".join(run_ids), statuses, found.drop(columns=["run"]), noise,
                                          overview_json(runs), storage_sensitivity["json"],
                                          thresholds.record(thresholds_file, overrides or {}, RULES),
                                          against_baseline.to_dict("records")),
        "runs": [{"run_id": r.run_id, "label": r.label, "dir": str(r.run_dir), "cluster": r.manifest.get("cluster"),
                  "status": r.manifest.get("status"), "started": r.manifest.get("started_at"),
                  "placement": placement_text(r, (r.manifest.get("storage") or {}).get("placement") or {})}
                 for r in runs],
        "run_ids": ", ".join(run_ids),
        "generated_at": now_utc(),
        "warnings": apples_and_oranges(runs), "excluded": excluded,
        "configurations": order, "baseline": order[0] if order else None,
        "workload_rows": pivot_rows(workloads, ["workload", "sweep"], order),
        "stage_order": stage_order,
        "stage_rows": pivot_rows(shared_stages, stage_keys, stage_order),
        "stages_alone": len(stages.drop_duplicates(stage_keys)) - len(shared_stages.drop_duplicates(stage_keys))
        if not stages.empty else 0,
        "differences": differed.to_dict("records"), "agreed": agreed,
        "fio_png": fio_curves_figure(series, "fio bandwidth, IOPS and ratio to the baseline versus block size "
                                             "per backend", run_ids, ratios, fio_baseline),
        "fio_baseline": fio_baseline, "fio_ratio_rows": fio_ratio_rows(ratios),
        "io_patterns": patterns,
        "heatmaps": heatmaps,
        "size_figures": request_size_figures_across(views),
        "offset_figures": offset_figures_across(views),
        "throughput_figures": throughput_figures_across(views),
        "io_rows": io_rows(throughput) if not throughput.empty else [],
        "throughput_png": configuration_bars(
            throughput, "cluster_bytes_per_s", "cluster throughput (MB/s)",
            "cluster throughput = result size / run-step time, median", run_ids) if not throughput.empty else None,
        "shuffle_rows": shuffle_rows(shuffle) if not shuffle.empty else [],
        "shuffle_png": configuration_bars(
            shuffle.assign(workload=shuffle["workload"] + " " + shuffle["application"]), "shuffle_write_bytes",
            "shuffle written (MB)", "shuffle volume per application, median", run_ids) if not shuffle.empty else None,
    }
    return context, tables


def gate_context(table: pd.DataFrame | None, max_slowdown_pct: float | None) -> dict | None:
    """The gate's section of the page: its allowance, overall result and one row per verdict."""
    if table is None:
        return None
    return {"max_slowdown": number(max_slowdown_pct, "%", 1), "failed": len(gate.failed(table)),
            "rows": gate_rows(table)}


def gate_lines(table: pd.DataFrame, baseline: str, max_slowdown_pct: float) -> list[str]:
    """What `make compare ... MAX_SLOWDOWN=` prints: a verdict per workload and stage, then the overall result."""
    lines = [f"regression gate: against the baseline {baseline}, MAX_SLOWDOWN {number(max_slowdown_pct, '%', 1)}"]
    for row in gate_rows(table):
        lines.append(f"  {row['gate']:<15} {row['workload']}{' ' + row['sweep'] if row['sweep'] else ''} | "
                     f"{row['stage']} | {row['configuration']}: {row['median']} vs {row['baseline_median']} "
                     f"({row['slowdown']}) - {row['reason']}")
    bad = gate.failed(table)
    counts = ", ".join(f"{n} {verdict}" for verdict, n in table["gate"].value_counts().items())
    if len(bad):
        lines.append(f"regression gate: FAILED: {len(bad)} significant slowdown{'s' if len(bad) > 1 else ''} beyond "
                     f"MAX_SLOWDOWN ({counts})")
    else:
        lines.append(f"regression gate: passed ({counts or 'nothing compared'})")
    return lines


def default_out_dir(runs: list[Run]) -> Path:
    return RESULTS_DIR / ("compare-" + "-vs-".join(r.run_id for r in runs))


@dataclass
class Comparison:
    """What write_comparison wrote: the page, and the gate's verdicts and printed lines when the gate was asked."""

    html: Path
    gate: pd.DataFrame | None = None
    gate_lines: list[str] = field(default_factory=list)

    @property
    def gate_failed(self) -> bool:
        return self.gate is not None and not gate.failed(self.gate).empty


def write_comparison(refs: list[str], out_dir: Path | None = None, noise_pct: float | None = None,
                     baseline: str | None = None, max_slowdown: str | None = None) -> Path:
    """Write compare.html, findings.json and tables/<name>.csv/.parquet into out_dir; returns the HTML path."""
    return compare_runs(refs, out_dir, noise_pct, baseline, max_slowdown).html


def compare_runs(refs: list[str], out_dir: Path | None = None, noise_pct: float | None = None,
                 baseline: str | None = None, max_slowdown: str | None = None,
                 thresholds_file: Path | None = None) -> Comparison:
    """Write the comparison (write_comparison). `noise_pct`: the host's measured run-to-run noise (%), when known.
    `baseline`: the run every verdict is against (default: the first of `refs`). `max_slowdown` (`5%`) or
    `baseline` turn the regression gate on (no allowance given: 0 %): its verdicts go to tables/compare_gate, the
    page and the returned Comparison."""
    gated = baseline is not None or max_slowdown is not None
    try:
        max_slowdown_pct = gate.parse_max_slowdown(max_slowdown) if gated else None
        overrides = thresholds.load(thresholds_file, RULES) if thresholds_file is not None else {}
    except (gate.GateError, thresholds.ThresholdError) as error:
        raise CompareError(str(error)) from None
    runs = load_runs(with_baseline_first(refs, baseline))
    noise = None if noise_pct is None else statistics.Noise(float(noise_pct), "given: --noise-pct")
    out_dir = Path(out_dir) if out_dir else default_out_dir(runs)
    # A results/ folder is as writable as the runs in it: no file or folder written here follows a symlink.
    tables_dir = safeio.directory(safeio.directory(out_dir) / "tables")
    context, tables = build_comparison(runs, noise, max_slowdown_pct, thresholds_file, overrides)
    for name, frame in tables.items():
        frame = frame.copy()
        for column in frame.columns:
            if isinstance(frame[column].dtype, pd.CategoricalDtype):
                frame[column] = frame[column].astype(str)
        with safeio.replacing(tables_dir / f"{name}.csv", "w") as handle:
            frame.to_csv(handle, index=False)
        with safeio.replacing(tables_dir / f"{name}.parquet") as handle:
            frame.to_parquet(handle, index=False)
    context["tables_dir"] = str(tables_dir)
    safeio.write_text(out_dir / FINDINGS, context["findings_json"])
    html = safeio.write_text(out_dir / "compare.html", render_page("compare.html.j2", context))
    if max_slowdown_pct is None:
        return Comparison(html)
    table = tables["compare_gate"]
    baseline_name = runs[0].run_id if runs[0].label == runs[0].run_id else f"{runs[0].label} ({runs[0].run_id})"
    verdicts = gate_lines(table, baseline_name, max_slowdown_pct)
    # the findings against the baseline before the gate's last line, its result, which stays the last
    return Comparison(html, table, verdicts[:-1] + findings_diff.summary_lines(tables["compare_findings_diff"],
                                                                               baseline_name) + verdicts[-1:])
