"""The report's "Model" section (presentation of analysis.models): per measured configuration of the run, the I/O-aware model's stage times
(predicted from the run's other configurations when it has any, else the in-sample fit), the error against
what was measured, and the Monotasks bottleneck of each stage."""
from __future__ import annotations

from ..formatting import number, rate, size_label
from ..models import bottleneck
from ..models.iomodel.bandwidths import Bandwidths
from ..models.iomodel.configurations import Configuration, left_out_under_load
from ..models.iomodel.evaluation import evaluate, stage_label
from ..models.iomodel.fit_predict import Target, fit
from ..stages import STAGE_IDENTITY


def _same(a: Configuration, b: Configuration) -> bool:
    return a.key == b.key and (a.hdfs, a.local, a.cores, a.nodes) == (b.hdfs, b.local, b.cores, b.nodes)


def _basis(others: list[Configuration]) -> str:
    if not others:
        return "in-sample: the run has no other configuration of this workload to predict it from"
    loaded = left_out_under_load(others)
    used = [c for c in others if not any(c is x for x in loaded)]
    text = "predicted from " + "; ".join(sorted({c.label for c in used}))
    if loaded:
        text += " (left out, measured under load: " + "; ".join(
            f"{c.label}, niced processes {c.foreign_cpu_pct:.0f} % of the CPU" for c in loaded) + ")"
    return text


def left_out_inputs(bandwidths: Bandwidths) -> list[str]:
    """Every fio point the bandwidth curves leave out, with its sweep and the reason."""
    return [f"{p['profile']} {p['rw']} {size_label(p['block_size_bytes'])}: {rate(p['bandwidth_bytes_per_s'], 1)} "
            f"({p['source']}) left out: {p['reason']}" for p in bandwidths.left_out]


def model_section(configs: list[Configuration], bandwidths: Bandwidths) -> dict:
    """`configs`: the run's measured configurations (configurations_of), `bandwidths`: its fio curves."""
    if not configs:
        return {"tables": [], "note": "no measured workload run with Spark stages: nothing to model",
                "left_out": left_out_inputs(bandwidths)}
    tables, done = [], []
    for config in configs:
        if any(_same(config, d) for d in done):
            continue   # repetitions of a configuration are compared together (median)
        done.append(config)
        others = [c for c in configs if c.key == config.key and not _same(c, config)]
        models = fit(others or [config], bandwidths)
        target = Target(config.hdfs, config.local, config.cores, config.nodes)
        repeats = [c for c in configs if _same(c, config)]
        evaluation = evaluate([], target, bandwidths, repeats, models={config.key: models[config.key]})
        joined = evaluation.stages
        own = fit(repeats, bandwidths)[config.key]
        limits = bottleneck.stage_bottlenecks(config, own, bandwidths)
        merged = joined.merge(limits.drop(columns=["measured_s", "stage_id"]),
                              on=["workload", "sweep", *STAGE_IDENTITY], how="left")
        rows = []
        for r in merged.to_dict("records"):
            resource = r.get("bottleneck")
            rows.append({"stage": stage_label(r), "name": r["name"], "tasks": r["tasks"],
                         "t_scale": number(r["t_scale_s"], "s"), "read": number(r["t_read_limit_s"], "s"),
                         "write": number(r["t_write_limit_s"], "s"), "predicted": number(r["predicted_s"], "s"),
                         "bound": r["bound"], "measured": number(r["measured_s"], "s"),
                         "error": number(r["error_pct"], "%", 1),
                         "ideal": " / ".join(number(r.get(f"ideal_{x}_s"), "s") for x in bottleneck.RESOURCES),
                         "bottleneck": resource if isinstance(resource, str) else "-",
                         "without": number(r.get(f"{resource}_infinite_s"), "s") if isinstance(resource, str) else "-"})
        summary = evaluation.summary
        tables.append({"workload_id": config.workload_id, "configuration": config.label, "rows": rows,
                       "basis": _basis(others),
                       "median": number(summary.get("median_abs_error_pct"), "%", 1),
                       "worst": number(summary.get("worst_stage_error_pct"), "%", 1),
                       "sources": sorted({p["bandwidth_source"] for paths in joined["io_paths"] for p in paths})})
    return {"tables": tables, "note": "", "left_out": left_out_inputs(bandwidths)}
