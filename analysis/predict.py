"""`python -m analysis predict <run> --to <backend | hdfs=a,local=b> [--cores N] [--nodes N] [--json]`:
fit the I/O-aware model on a run's measured configurations and predict another one."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from . import devices, safeio
from .formatting import number
from .models.iomodel.bandwidths import Bandwidths, bandwidths_of
from .models.iomodel.configurations import (MODEL_TABLES, Configuration, configurations_of, left_out_under_load,
                                            load_notes)
from .models.iomodel.evaluation import error_summary, evaluate, stage_label
from .models.iomodel.export import to_json
from .models.iomodel.fit_predict import Target, parse_target
from .parsers.manifest import load_manifest
from run_layout import resolve_run_dir
from .tables import run_tables


class PredictError(ValueError):
    """Nothing to fit or a target the model cannot evaluate."""


def configurations_in(run_dir: Path) -> list[Configuration]:
    """The measured configurations of a run directory, from its manifest and the tables the model reads."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    return configurations_of(manifest.get("run_id") or run_dir.name, manifest, run_tables(run_dir, MODEL_TABLES))


def bandwidths_in(run_dirs: list[Path]) -> Bandwidths:
    """The fio curves and recorded storage profiles of the runs named, the first run that swept a profile first
    (bandwidths_of); a damaged run is no source of curves."""
    sources = []
    for run_dir in map(Path, run_dirs):
        try:
            tables = run_tables(run_dir, ("fio", "devices"))
        except (safeio.Refused, OSError, ValueError):
            continue
        try:
            manifest = load_manifest(run_dir)
        except (safeio.Refused, OSError, ValueError):
            manifest = {}
        sources.append((run_dir.name, manifest, tables))
    return bandwidths_of(sources)


def _fit_per_workload(configs: list[Configuration], same: list[Configuration]
                      ) -> tuple[list[Configuration], list[str]]:
    """What to fit each workload on, as the report's model section does: its runs of other configurations, so that
    a measured target is a real prediction; its runs of the target itself when it was measured there only (the
    default bench measures TPC-H, K-means and GATK4 on one placement), those workloads named as fitted in-sample."""
    def is_target(config: Configuration) -> bool:
        return any(config is c for c in same)
    elsewhere = {c.key for c in configs if not is_target(c)}
    profile = [c for c in configs if not is_target(c) or c.key not in elsewhere]
    in_sample = sorted({f"{c.workload} {c.sweep}".strip() for c in configs if c.key not in elsewhere})
    return profile, in_sample


def prediction(run: str, to: str, cores: int | None = None, nodes: int | None = None,
               measured_runs: list[str] = (), fio_runs: list[str] = ()) -> dict:
    """Fit each workload on its runs of configurations other than the target (so that a measured target is a real
    prediction; on the target's own runs when it has no other, marked in-sample), predict the target, and compare
    with every measured run of exactly that configuration in this run and in `measured_runs`."""
    run_dir = resolve_run_dir(run)
    configs = configurations_in(run_dir)
    if not configs:
        raise PredictError(f"{run_dir}: no measured workload run with Spark stages to fit the model on")
    try:
        profiles = devices.backend_profiles(run_tables(run_dir, ("devices",))["devices"])
        hdfs, local = parse_target(to, profiles)
    except ValueError as error:
        raise PredictError(str(error)) from None
    common_cores = Counter(c.cores for c in configs).most_common(1)[0][0]
    target = Target(hdfs, local, cores or common_cores, nodes or configs[0].nodes)
    extra_dirs = [resolve_run_dir(r) for r in measured_runs]
    # only the runs named: a prediction is a function of its inputs, never of what else lies in results/
    bandwidths = bandwidths_in([run_dir, *extra_dirs, *(resolve_run_dir(r) for r in fio_runs)])
    same = [c for c in configs if (c.hdfs, c.local, c.cores, c.nodes) == (target.hdfs, target.local, target.cores,
                                                                            target.nodes)]
    profile, in_sample = _fit_per_workload(configs, same)
    measured_configs = same + [c for d in extra_dirs for c in configurations_in(d)]
    try:
        result = evaluate(profile, target, bandwidths, measured_configs)
    except KeyError as error:
        raise PredictError(f"--to {to}: {error.args[0]}") from None
    loaded = left_out_under_load(profile)
    stages = result.stages.assign(in_sample=[f"{w} {s}".strip() in in_sample
                                             for w, s in zip(result.stages["workload"], result.stages["sweep"])])
    # an in-sample fit reproduces what it was fitted on: its errors say nothing of the model's
    summary = error_summary(stages[~stages["in_sample"]])
    return {"target": target, "models": result.models, "stages": stages,
            "in_sample": in_sample,
            "profile": sorted({f"{c.run_id} {c.workload_id} ({c.label})" for c in profile
                               if not any(c is x for x in loaded)}),
            "load_notes": load_notes(profile, measured_configs),
            "summary": summary}


def render_text(result: dict) -> str:
    target, stages, summary = result["target"], result["stages"], result["summary"]
    lines = [f"I/O-aware model prediction for {target.label} (P = executor cores per node, N = nodes)",
             "fitted on: " + "; ".join(result["profile"])]
    lines += result["load_notes"]
    if result["in_sample"]:
        lines.append("note: measured on the target's configuration only, so fitted on it (in-sample): "
                     + ", ".join(result["in_sample"]))
    header = ["workload", "stage", "name", "tasks", "t_scale", "read limit", "write limit", "predicted", "bound",
              "measured", "error"]
    table = [header]
    for r in stages.to_dict("records"):
        table.append([f"{r['workload']} {r['sweep']}".strip(), stage_label(r), str(r["name"])[:38],
                      f"{r['tasks']} tasks", number(r["t_scale_s"], "s"), number(r["t_read_limit_s"], "s"),
                      number(r["t_write_limit_s"], "s"), number(r["predicted_s"], "s"), r["bound"],
                      number(r.get("measured_s"), "s"), number(r.get("error_pct"), "%", 1)])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in table]
    for app in summary.get("workloads", []):
        lines.append(f"{app['workload']} {app['sweep']}: stages predicted {app['predicted_s']:.2f} s, measured "
                     f"{app['measured_s']:.2f} s ({app['error_pct']:+.1f} %); median |stage error| "
                     f"{app['median_abs_stage_error_pct']:.1f} %")
    if summary.get("stages_compared"):
        lines.append(f"all stages: median |error| {summary['median_abs_error_pct']:.1f} %, worst "
                     f"{summary['worst_stage_error_pct']:+.1f} % ({summary['worst_stage']})")
    compared = {(app["workload"], app["sweep"]) for app in summary.get("workloads", [])}
    for (workload, sweep), group in stages.groupby(["workload", "sweep"], sort=False):
        if (workload, sweep) in compared:
            continue
        why = ("in-sample: the fit reproduces its own runs, no error to state" if group["in_sample"].all() else
               "no measured run of this configuration to compare with (--measured RUN adds runs)")
        lines.append(f"{workload} {sweep}".strip() + f": predicted sum of stage times {group['predicted_s'].sum():.2f} s"
                     f"; {why}")
    return "\n".join(lines)


def render_json(result: dict) -> str:
    stages = result["stages"]
    return to_json(stages, result["summary"], result["target"], result["models"], result["profile"])


def main(run: str, to: str, cores: int | None, nodes: int | None, as_json: bool, measured: list[str],
         fio: list[str] = ()) -> str:
    result = prediction(run, to, cores, nodes, measured, fio)
    return render_json(result) if as_json else render_text(result)

