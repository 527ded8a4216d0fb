"""One self-contained HTML page per run: the run's tables through metrics into the presentation's rows and
figures (analysis.presentation), rendered by templates/report.html.j2."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import access_patterns, devices, fio_limits, metrics, safeio, statistics
from .findings import engine, thresholds
from .findings.rules import RULES
from .formatting import format_bytes, now_utc, number, rate, utc
from .hibench import hibench_report
from .parsers.manifest import load_manifest, missing_keys
from .presentation.figures.block_requests import offset_figures, request_size_figures
from .presentation.figures.configurations import cores_figures
from .presentation.figures.fio import fio_figure
from .presentation.figures.heatmaps import heatmap_figures
from .presentation.figures.throughput import backend_throughput_figure, throughput_figures
from .presentation.rows.findings_section import findings_context
from .presentation.rows.io_patterns import io_pattern_sections
from .presentation.rows.overview import overview_rows
from .presentation.rows.report_tables import (cores_rows, fio_rows, gluster_rows, mr_rows, pfs_client_rows,
                                              placement_rows, shuffle_model_rows, stage_request_tables, stage_rows,
                                              workload_io_rows)
from .presentation import findings_export, render_page
from .presentation.page_sections import section_failed, storage_sensitivity_section
from .models import hdd_datasheet, sensitivity
from .models.iomodel.bandwidths import Bandwidths, bandwidths_of
from .models.iomodel.configurations import Configuration, configurations_of
from .presentation.model_section import model_section
from run_layout import FINDINGS, FINDINGS_TABLE, HIBENCH_REPORT, REPORT, TABLES
from .tables import read_tables


def _problems(manifest: dict, tables: dict[str, pd.DataFrame]) -> list[str]:
    """What a reader must know before trusting the numbers: missing or failed pieces."""
    problems = []
    if not manifest:
        problems.append("manifest.json is missing or unreadable: run-level facts and step statuses are unknown.")
    else:
        gaps = missing_keys(manifest)
        if gaps:
            problems.append(f"manifest.json lacks {', '.join(gaps)} (partial run?).")
        if manifest.get("status") not in (None, "completed"):
            problems.append(f"run status is {manifest.get('status')!r}, not 'completed'.")
    steps = tables["steps"]
    for step in steps[~steps["status"].isin(["ok"])].itertuples():
        where = f"workload {step.workload_id}" if step.workload_id else "run"
        problems.append(f"step {step.name} of {where}: {step.status}" + (f" ({step.error})" if step.error else ""))
    for workload in tables["workloads"].itertuples():
        if workload.status == "invalid":
            problems.append(f"workload {workload.workload_id}: INVALID: its output failed validation; its numbers "
                            "are shown but left out of every median and comparison")
        elif workload.status not in ("ok",):
            problems.append(f"workload {workload.workload_id}: {workload.status}")
    budgets = tables["node_budget"]
    for killed in budgets[budgets["oom_kills"].fillna(0) > 0].itertuples() if "oom_kills" in budgets else []:
        limit = format_bytes(killed.memory_limit_bytes) if pd.notna(killed.memory_limit_bytes) else "no memory limit"
        problems.append(
            f"{killed.host}'s node budget ({limit}, spillway_node.memory_gib) ran out of memory during "
            f"{killed.workload_id}: the kernel killed {int(killed.oom_kills)} of the node's processes (OOM), which "
            "fails or slows what they ran. Fix: raise spillway_node.memory_gib in the inventory, or give the workload "
            "less memory (PARAMS, e.g. its executors' memory), or lower the node's daemons' heaps (hadoop_daemons "
            "heap_mb)")
    for source in tables["sources"][~tables["sources"]["status"].isin(["ok", "none"])].itertuples():
        problems.append(f"{source.source} of {source.workload_id} on {source.host}: {source.status} — {source.message}")
    for source in tables["sources"][tables["sources"]["message"].fillna("").str.startswith("repaired")].itertuples():
        problems.append(f"{source.file}: {source.message}")
    return problems


def _emulation(manifest: dict) -> dict:
    emulation = manifest.get("emulation") or {}
    profiles = []
    for name, profile in (emulation.get("profiles") or {}).items():
        profile = profile if isinstance(profile, dict) else {"value": profile}
        profiles.append({"name": name, "items": [(k, _describe_profile_value(k, v)) for k, v in profile.items()]})
    limitations = emulation.get("limitations") or []
    if isinstance(limitations, str):
        limitations = [limitations]
    return {"present": "emulation" in manifest, "profiles": profiles, "limitations": limitations}


def _scale_model_fact(manifest: dict) -> list[tuple[str, str]]:
    """The reference node a scale-model run stands for and k, for the page's facts (none for another run)."""
    scaled = (manifest.get("emulation") or {}).get("scale_model") if isinstance(manifest, dict) else None
    if not isinstance(scaled, dict) or not isinstance(scaled.get("reference"), dict):
        return []
    def figure(value) -> str:   # the manifest is untrusted: a value that is no number shows as missing
        return number(value if isinstance(value, (int, float)) and not isinstance(value, bool) else None, "", 3)

    reference = scaled["reference"]
    shares = scaled.get("disk_shares") if isinstance(scaled.get("disk_shares"), dict) else {}
    return [("scale model of", f"{str(reference.get('name'))[:200]} ({str(reference.get('source'))[:500]}): "
             f"k = {figure(scaled.get('k'))}, each emulated disk "
             + ", ".join(f"{str(p)[:40]} {figure(s)} of one" for p, s in sorted(shares.items(), key=str)))]


def _describe_drive_model(model: dict) -> str:
    """A profile's disk model (the hdd profile's, inventories/storage-profiles.yml) in words: what drive, its
    parameters as the server takes them (units in their names), where they come from and which are assumed."""
    parts = [f"{model.get('name', 'disk model')} of a {model.get('drive', 'drive')}"]
    for label, key in (("parameters", "options"), ("host path", "host_path")):
        if model.get(key):
            parts.append(f"{label}: " + ", ".join(f"{name} {value}" for name, value in model[key].items()))
    if model.get("sources"):
        parts.append("sources: " + "; ".join(model["sources"]))
    if model.get("assumed"):
        parts.append("assumed, not on the datasheet: " + ", ".join(model["assumed"]))
    return "; ".join(parts)


def _describe_profile_value(key: str, value) -> str:
    if key == "model" and isinstance(value, dict):
        return _describe_drive_model(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "iops" in key:
            return "uncapped" if value == 0 else f"{value:,} requests/s"
        if "bps" in key or "bandwidth" in key or "bytes" in key:
            return "uncapped" if value == 0 else rate(value, 1)
        if key.endswith("_ms"):
            return f"{value} ms"
    return value if isinstance(value, str) else json.dumps(value)


def _page(run_dir: Path) -> str:
    """How the warnings of a failed section name this page."""
    return f"report of {Path(run_dir).name}"


def _section_failed(run_dir: Path, what: str, error: Exception) -> str:
    return section_failed(_page(run_dir), what, error, stacklevel=4)


def _model_inputs(run_dir: Path, run_id: str, manifest: dict, tables: dict[str, pd.DataFrame]
                  ) -> tuple[list[Configuration], Bandwidths, str]:
    """The run's measured configurations and fio curves as the models take them, from the tables the page read, or
    the error that kept them (shown, not raised)."""
    try:
        return (configurations_of(run_id, manifest, tables),
                bandwidths_of([(Path(run_dir).name, manifest, tables)]), "")
    except Exception as error:  # noqa: BLE001 - shown in the sections instead
        return [], Bandwidths(), _section_failed(run_dir, "the model", error)


def _model_section(run_dir: Path, configs: list[Configuration], bandwidths: Bandwidths,
                   failed: str) -> dict:
    """The I/O-aware model and bottleneck section (analysis/models); a model failure must not cost the report."""
    if failed:
        return {"tables": [], "note": failed}
    try:
        return model_section(configs, bandwidths)
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        return {"tables": [], "note": _section_failed(run_dir, "the model", error)}


def _overview(run_dir: Path, run_id: str, tables: dict[str, pd.DataFrame], configs: list[Configuration],
              bandwidths: Bandwidths) -> dict:
    """Per measured workload run: where its stage time went, what it moved by path and backend, who served its
    reads (findings_export.overview_frames), as the page's rows and as findings.json's objects; a failure must not cost
    the report."""
    try:
        frames = findings_export.overview_frames(tables, configs, bandwidths)
        return {"rows": overview_rows(*frames), "error": "",
                "json": findings_export.section(findings_export.overview_records(run_id, *frames))}
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        note = _section_failed(run_dir, "the overview", error)
        return {"rows": [], "error": note, "json": findings_export.section(error=note)}


def _hibench(run_dir: Path, tables: dict[str, pd.DataFrame], manifest: dict) -> dict:
    """hibench.report's text and what it left out (analysis.hibench); a failure costs that file, not the report."""
    try:
        written = hibench_report(tables, manifest)
        return {"text": written.text, "lines": written.lines, "left_out": written.left_out, "file": HIBENCH_REPORT,
                "error": ""}
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        return {"text": "", "lines": 0, "left_out": [], "file": HIBENCH_REPORT,
                "error": _section_failed(run_dir, "hibench.report", error)}


def _io_patterns(run_dir: Path, tables: dict[str, pd.DataFrame], spans: pd.DataFrame, backends: dict,
                 run_id: str) -> dict:
    """Darshan-style views per workload run from the block trace (analysis.access_patterns): the heat map of bytes
    over time with the stages, the common access sizes, the sequential share; a failure must not cost the report."""
    try:
        requests = tables["block_requests"]
        traced = requests["workload_id"].tolist() if "workload_id" in requests else []
        workload_ids = list(dict.fromkeys([*tables["workloads"]["workload_id"].tolist(), *traced]))
        sections = io_pattern_sections(workload_ids, heatmap_figures(requests, spans, backends, run_id),
                                            access_patterns.common_access_sizes(requests),
                                            access_patterns.sequential_share(requests), backends, tables["sources"])
        return {"sections": sections, "error": ""}
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        return {"sections": [], "error": _section_failed(run_dir, "the I/O pattern section", error)}


def _sensitivity(run_dir: Path, tables: dict[str, pd.DataFrame], configs: list[Configuration],
                 bandwidths: Bandwidths) -> dict:
    """Each workload's run step on every placement of the run's backends, measured or predicted with the model's
    error on this run (models.sensitivity); a failure must not cost the report."""
    def storage_sensitivity() -> pd.DataFrame:
        profiles = sorted(set(devices.backend_profiles(tables["devices"]).values()))
        return sensitivity.storage_sensitivity(configs, profiles, bandwidths)

    return storage_sensitivity_section(_page(run_dir), storage_sensitivity)


def _findings(run_id: str, tables: dict[str, pd.DataFrame], noise,
              rules=RULES) -> tuple[dict, list[dict], pd.DataFrame]:
    """The rule set over the run's tables; a rule that fails must not cost the report (shown in the section)."""
    try:
        statuses, table = engine.evaluate(rules, tables, noise)
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        note = section_failed(f"report of {run_id}", "the findings", error)
        empty = pd.DataFrame(columns=engine.COLUMNS)
        return {**findings_context([], empty, noise), "error": note}, [], empty
    return findings_context(statuses, table, noise, f"{FINDINGS}, {TABLES}/{FINDINGS_TABLE}"), statuses, table


def build_context(run_dir: Path, thresholds_file: Path | None = None, overrides: dict | None = None) -> dict:
    """The page's context; `overrides`: the rules' thresholds read from `thresholds_file` (findings.thresholds)."""
    overrides = overrides or {}
    rules = thresholds.apply(RULES, overrides)
    manifest = load_manifest(run_dir)
    tables = read_tables(run_dir)
    run_id = manifest.get("run_id") or Path(run_dir).name
    spans = metrics.phase_spans(tables["stages"], tables["mr_jobs"])
    fio_curves = metrics.fio_curves(tables["fio"])
    steps = tables["steps"].assign(duration=lambda f: f["duration_s"].map(lambda v: number(v, "s", 1)),
                                   workload_id=lambda f: f["workload_id"].fillna(""))
    workloads = tables["workloads"].assign(
        duration=lambda f: f["duration_s"].map(lambda v: number(v, "s", 1)),
        start=lambda f: f["start_time_s"].map(utc),
        **{step: (lambda f, step=step: f[f"{step}_s"].map(lambda v: number(v, "s", 1)))
           for step in ("prepare", "run", "validate")},
        cores=lambda f: f["executor_cores"].map(lambda v: "default" if pd.isna(v) else str(int(v))))
    by_cores = metrics.stage_time_by_cores(tables["stages"], tables["workloads"])
    backends = devices.device_backends(tables["devices"])
    requests, stages = tables["block_requests"], tables["stages"]
    model = metrics.shuffle_request_size_model(requests, stages, devices.local_devices(tables["workloads"],
                                                                                      tables["devices"]))
    cores, per_stage_and_cores = cores_rows(by_cores)
    by_placement = metrics.run_time_by_placement(tables["workloads"])
    noise = statistics.noise_from_repetitions(by_placement, "this run's workloads")
    section, statuses, found = _findings(run_id, tables, noise, rules)
    configs, bandwidths, configs_failed = _model_inputs(run_dir, run_id, manifest, tables)
    return {
        "overview": _overview(run_dir, run_id, tables, configs, bandwidths),
        "io_patterns": _io_patterns(run_dir, tables, spans, backends, run_id),
        "sensitivity": _sensitivity(run_dir, tables, configs, bandwidths),
        "findings": section, "findings_statuses": statuses, "findings_table": found, "noise": noise,
        "thresholds": thresholds.record(thresholds_file, overrides, RULES),
        "run_id": run_id, "run_dir": str(run_dir), "manifest": manifest,
        "generated_at": now_utc(),
        "facts": [("cluster", manifest.get("cluster", "missing")), ("status", manifest.get("status", "missing")),
                  ("started", manifest.get("started_at", "missing")), ("ended", manifest.get("ended_at", "missing")),
                  ("controller", manifest.get("controller", "missing")),
                  ("harness commit", (manifest.get("git") or {}).get("commit", "missing")),
                  ("hosts", ", ".join(manifest.get("hosts", {}) or []) or "missing"),
                  ("placement", json.dumps((manifest.get("storage") or {}).get("placement", "missing"))),
                  *_scale_model_fact(manifest)],
        "problems": _problems(manifest, tables),
        "emulation": _emulation(manifest),
        "steps": steps.to_dict("records"), "workloads": workloads.to_dict("records"),
        "workload_io_rows": workload_io_rows(tables),
        "placement_rows": placement_rows(by_placement, noise),
        "cores": cores, "cores_rows": per_stage_and_cores, "cores_figures": cores_figures(by_cores, run_id),
        "stage_rows": stage_rows(tables["stages"]), "mr_rows": mr_rows(tables["mr_jobs"], tables["mr_counters"]),
        "gluster_rows": gluster_rows(tables["gluster_bricks"], tables["gluster_fops"]),
        "pfs_client_rows": pfs_client_rows(tables["pfs_client"]),
        "fio_rows": fio_rows(fio_curves, hdd_datasheet.sweep_expectations(
            fio_curves, tables["fio_extents"], devices.backend_profiles(tables["devices"]),
            fio_limits.recorded_profiles(manifest))), "fio_png": fio_figure(fio_curves, run_id),
        "size_figures": request_size_figures(tables["block_requests"], run_id),
        "throughput_figures": throughput_figures(tables["iostat"], spans, run_id, metrics.stage_io_rate(stages)),
        "stage_request_tables": stage_request_tables(metrics.stage_request_sizes(requests, stages, backends), stages),
        "shuffle_model_rows": shuffle_model_rows(model, backends),
        "offset_figures": offset_figures(requests, backends, run_id),
        "monitoring_png": backend_throughput_figure(metrics.backend_throughput(tables["prometheus_series"]),
                                                            tables["workloads"], run_id),
        "sources": tables["sources"].to_dict("records"),
        "model": _model_section(run_dir, configs, bandwidths, configs_failed),
        "hibench": _hibench(run_dir, tables, manifest),
    }


def render(context: dict) -> str:
    return render_page("report.html.j2", context)


def write_report(run_dir: Path, thresholds_file: Path | None = None, overrides: dict | None = None) -> Path:
    """Render report.html into the run directory and return its path. Written anew and renamed into place
    (analysis.safeio): a symlink planted as report.html is replaced, never written through. `thresholds_file`: the
    rules' thresholds from a file (analysis/findings/thresholds.py), read before the run is, once: `overrides` when
    the caller read it already (the CLI, to refuse a bad file before it reads the run)."""
    # read before the run is, and outside it (safeio.confined reads inside the run directory only)
    if overrides is None:
        overrides = thresholds.load(thresholds_file, RULES) if thresholds_file is not None else {}
    with safeio.confined(run_dir):
        context = build_context(Path(run_dir), thresholds_file, overrides)
        page = render(context)
    write_findings(Path(run_dir), context)
    if not context["hibench"]["error"]:
        safeio.write_text(Path(run_dir) / HIBENCH_REPORT, context["hibench"]["text"])
    return safeio.write_text(Path(run_dir) / REPORT, page)


def write_findings(run_dir: Path, context: dict) -> tuple[Path, Path]:
    """findings.json and tables/findings.parquet of the run (the rules' statuses and findings; findings.json also the
    page's overview and storage sensitivity, docs/findings.md)."""
    table_path = safeio.directory(run_dir / TABLES) / FINDINGS_TABLE
    with safeio.replacing(table_path) as handle:
        context["findings_table"].to_parquet(handle, index=False)
    text = findings_export.as_json(context["run_id"], context["findings_statuses"], context["findings_table"], context["noise"],
                            context["overview"]["json"], context["sensitivity"]["json"], context["thresholds"])
    return safeio.write_text(run_dir / FINDINGS, text), table_path
