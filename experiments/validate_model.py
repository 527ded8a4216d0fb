"""`python -m experiments.validate_model` (`make validate-model`): check the I/O-aware model against measurements on the emulated tiers.

1. Profile as the I/O-aware model paper's §VI does (four sample runs): P=1 and P=2 with HDFS and the local dirs
   on the fast backend, then P=2 with the local dirs on the slow backend, then P=2 with HDFS on it; a fio sweep
   of every backend gives BW against request size.
2. Measure every target backend (HDFS and local dirs both on it, P=2).
3. Fit on the profiling runs, predict each target, print predicted against measured per stage with the errors
   (median absolute stage error, worst stage, application = sum of stages). Then each measured target alone as
   the profile for the others (e.g. hdd -> ssd, nvme and the reverse).

Every run goes through the ordinary bench (`python -m spillway bench`), so each is a normal run directory with
its report. `--dry-run` prints the benches without running anything.
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from spillway import RESULTS
from spillway import inventory as inventory_mod
from spillway import workloads as workloads_mod
from spillway.bench.plan import parse_cores, placements

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CLUSTER = "tiers"
DEFAULT_WORKLOADS = "terasort,tpch"
DEFAULT_PARAMS = "terasort.engine=spark"
# The accuracy goal (median absolute stage error, worst stage), printed beside the measured figures.
GOAL_MEDIAN_PCT, GOAL_WORST_PCT = 10.0, 25.0


@dataclass
class BenchStep:
    role: str             # fio | profile | target
    label: str
    placement: str = ""   # hdfs=a,local=b
    cores: str = ""
    workloads: str = ""
    params: str = ""
    run_dir: Path | None = None

    def argv(self, cluster: str, scale: str, repeat: int) -> list[str]:
        args = [sys.executable, "-m", "spillway", "bench", "--cluster", cluster, "--workloads", self.workloads,
                "--scale", scale, "--repeat", str(repeat), "--params", self.params]
        if self.placement:
            args += ["--placement", self.placement]
        if self.cores:
            args += ["--cores", self.cores]
        return args


@dataclass
class Plan:
    cluster: str
    scale: str
    repeat: int
    steps: list[BenchStep] = field(default_factory=list)


def build_plan(cluster: str = DEFAULT_CLUSTER, workloads: str = DEFAULT_WORKLOADS, fast: str = "ssd", slow: str = "hdd",
               targets: str = "hdd,ssd,nvme", profile_cores: str = "1,2", cores: int = 2, scale: str = "tiny",
               repeat: int = 1, params: str = DEFAULT_PARAMS) -> Plan:
    """The benches, validated against the inventory and the bench's own parsers before anything runs."""
    inventory = inventory_mod.load(cluster)
    target_names = workloads_mod.parse_list(targets, ())
    for backend in {fast, slow, *target_names}:
        placements(inventory, f"hdfs={backend},local={backend}", "")   # raises on a backend the cluster lacks
    profile_p = parse_cores(profile_cores)
    if len(profile_p) < 2 or None in profile_p:
        raise workloads_mod.WorkloadError(f"--profile-cores {profile_cores!r}: two or more core counts (the paper: 1,2)")
    parse_cores(str(cores))
    names = workloads_mod.parse_list(workloads, ())
    for name in names:
        workloads_mod.load(name)
    workloads_mod.check_overrides([workloads_mod.load(n) for n in names], workloads_mod.parse_params(params), "PARAMS")
    chosen = ",".join(names)
    p = str(cores)
    steps = [
        BenchStep("fio", "fio sweep of every backend (BW against request size)", workloads="fio-sweep"),
        BenchStep("profile", f"sample runs 1-2: P={profile_cores} on {fast}", f"hdfs={fast},local={fast}",
                  ",".join(str(c) for c in profile_p), chosen, params),
        BenchStep("profile", f"sample run 3: local dirs on the slow {slow}", f"hdfs={fast},local={slow}", p, chosen, params),
        BenchStep("profile", f"sample run 4: HDFS on the slow {slow}", f"hdfs={slow},local={fast}", p, chosen, params),
    ]
    steps += [BenchStep("target", f"measure {backend}", f"hdfs={backend},local={backend}", p, chosen, params)
              for backend in target_names]
    return Plan(cluster, scale, repeat, steps)


def describe(plan: Plan) -> str:
    lines = [f"validate-model plan: cluster {plan.cluster}, scale {plan.scale}, {len(plan.steps)} benches"]
    for number, step in enumerate(plan.steps, 1):
        command = " ".join(shlex.quote(a) for a in step.argv(plan.cluster, plan.scale, plan.repeat)[1:])
        lines.append(f"{number}. [{step.role}] {step.label}\n   python {command}")
    lines.append("then: fit the I/O-aware model on the profile runs, predict each target, print predicted vs measured")
    return "\n".join(lines)


def _runs_of(cluster: str, results: Path) -> set[Path]:
    return {p for p in results.glob(f"*-{cluster}") if (p / "manifest.json").exists()}


def execute(plan: Plan, results: Path) -> None:
    """Run the benches one after the other; the run directory of each is the one it created."""
    for number, step in enumerate(plan.steps, 1):
        print(f"== validate-model {number}/{len(plan.steps)}: {step.label}", flush=True)
        before = _runs_of(plan.cluster, results)
        code = subprocess.call(step.argv(plan.cluster, plan.scale, plan.repeat), cwd=REPO)
        created = sorted(_runs_of(plan.cluster, results) - before)
        if not created:
            raise RuntimeError(f"bench '{step.label}' made no run directory (exit {code}); runs so far: "
                               + ", ".join(str(s.run_dir) for s in plan.steps if s.run_dir))
        step.run_dir = created[-1]
        if code != 0:
            # failed and invalid workload runs never enter the fit or the comparison (measured runs only)
            print(f"   warning: bench '{step.label}' did not complete (exit {code}): its failed runs are left out; "
                  f"see {step.run_dir}/report.html", flush=True)


# ---------------------------------------------------------------- the comparison

def _figures(figures: dict) -> str:
    """`n / median / worst / weighted` of iomodel.evaluation.error_figures, `-` where no stage is covered."""
    if not figures["stages"]:
        return f"{0:>3} {'-':>8} {'-':>9} {'-':>8}"
    return (f"{figures['stages']:>3} {figures['median_abs_error_pct']:>6.1f} % {figures['worst_abs_error_pct']:>7.1f} % "
            f"{figures['weighted_error_pct']:>6.1f} %")


def compare(profile_runs: list[Path], target_runs: list[Path], fio_runs: list[Path],
            min_stage_s: float | None = None) -> tuple[str, list[dict]]:
    """Fit on the profile runs, predict every target configuration; then each target alone as the profile of the
    others. Returns the printed text and one summary row per (profile, target, workload), with the error figures
    over every stage (`all`) and over the stages measured at `min_stage_s` or longer (`long`)."""
    from analysis.formatting import number
    from analysis.models.iomodel.configurations import load_notes
    from analysis.models.iomodel.evaluation import MIN_STAGE_S, evaluate, stage_label
    from analysis.models.iomodel.fit_predict import Target, fit
    from analysis.predict import bandwidths_in, configurations_in

    min_stage_s = MIN_STAGE_S if min_stage_s is None else min_stage_s
    bandwidths = bandwidths_in([*fio_runs, *profile_runs, *target_runs])
    profile = [c for run in profile_runs for c in configurations_in(run)]
    targets = [c for run in target_runs for c in configurations_in(run)]
    lines, rows = load_notes(profile, targets), []

    def one(profile_configs, label):
        models = fit(profile_configs, bandwidths)
        for target_key in sorted({(c.hdfs, c.local, c.cores, c.nodes) for c in targets}):
            target = Target(*target_key)
            if all((c.hdfs, c.local, c.cores, c.nodes) == target_key for c in profile_configs):
                continue   # a backend is not its own validation
            evaluation = evaluate(profile_configs, target, bandwidths, targets, min_stage_s, models=models)
            joined, summary = evaluation.stages, evaluation.summary
            lines.append(f"\n-- profile {label} -> {target.label} (stage ids of the measured run)")
            lines.append(f"{'workload':<22} {'stage':<10} {'group name':<40} {'predicted':>11} {'measured':>11} {'error':>9}  bound")
            for r in joined.to_dict("records"):
                name = f"{r['job_group']} {r['name']}".strip()
                lines.append(f"{(r['workload'] + ' ' + r['sweep']).strip():<22} {stage_label(r):<10} "
                             f"{name[:40]:<40} {number(r['predicted_s'], 's'):>11} {number(r['measured_s'], 's'):>11} "
                             f"{number(r['error_pct'], '%', 1):>9}  {r['bound']}")
            for app in summary.get("workloads", []):
                rows.append({"profile": label, "target": target.label, **app,
                             "worst_stage_error_pct": app["all"]["worst_abs_error_pct"]})

    one(profile, "paper's 4 sample runs")
    for backend in sorted({c.hdfs for c in targets if c.hdfs == c.local}):
        one([c for c in targets if (c.hdfs, c.local) == (backend, backend)], f"{backend} only")
    lines.append("\n== summary (error = (predicted - measured) / measured; n = stages covered; median and worst of "
                 "|stage error|; weighted = sum |predicted - measured| / sum measured; application = sum of its stages)")
    figures = f"{'n':>3} {'median':>8} {'worst':>9} {'weighted':>8}"
    lines.append(f"{'':<24} {'':<32} {'':<18} {'all stages':<31}   {'stages measured >= %g s' % min_stage_s:<31}")
    lines.append(f"{'profile':<24} {'target':<32} {'workload':<18} {figures}   {figures}   {'application':>11}")
    for r in rows:
        lines.append(f"{r['profile']:<24} {r['target']:<32} {(r['workload'] + ' ' + r['sweep']).strip():<18} "
                     f"{_figures(r['all'])}   {_figures(r['long'])}   {r['error_pct']:>+9.1f} %")
    if rows:
        for scope, title in (("all", "all stages"), ("long", f"stages >= {min_stage_s:g} s")):
            covered = [r[scope] for r in rows if r[scope]["stages"]]
            if not covered:
                lines.append(f"over all, {title}: no stage")
                continue
            medians = sorted(f["median_abs_error_pct"] for f in covered)
            worst = max(f["worst_abs_error_pct"] for f in covered)
            weighted = sorted(f["weighted_error_pct"] for f in covered)
            lines.append(f"over all, {title} ({sum(f['stages'] for f in covered)} stage comparisons): median of medians "
                         f"{medians[len(medians) // 2]:.1f} % (goal <= {GOAL_MEDIAN_PCT:g} %), worst stage {worst:.1f} % "
                         f"(goal <= {GOAL_WORST_PCT:g} %), median weighted {weighted[len(weighted) // 2]:.1f} %")
    return "\n".join(lines), rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", default=DEFAULT_CLUSTER, help="inventory with the backends (default: tiers)")
    parser.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    parser.add_argument("--params", default=DEFAULT_PARAMS, help="parameter overrides as for bench")
    parser.add_argument("--scale", default="tiny")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--fast", default="ssd", help="backend of sample runs 1-2")
    parser.add_argument("--slow", default="hdd", help="backend of sample runs 3-4")
    parser.add_argument("--targets", default="hdd,ssd,nvme", help="backends to predict and measure")
    parser.add_argument("--profile-cores", default="1,2", help="P of sample runs 1-2")
    parser.add_argument("--cores", type=int, default=2, help="P of the other runs")
    parser.add_argument("--dry-run", action="store_true", help="print the benches and run nothing")
    parser.add_argument("--profile-runs", default="", help="skip benching: comma-separated profile run ids/dirs")
    parser.add_argument("--target-runs", default="", help="with --profile-runs: the measured target runs")
    parser.add_argument("--fio-runs", default="", help="with --profile-runs: runs holding the fio sweep")
    parser.add_argument("--min-stage-s", type=float, default=None,
                        help="also give the errors over the stages measured at this many seconds or longer (default 1.0)")


def run(args: argparse.Namespace) -> int:
    from run_layout import resolve_run_dir

    if args.profile_runs:
        resolve = lambda text: [resolve_run_dir(r) for r in workloads_mod.parse_list(text, ())]  # noqa: E731
        text, _ = compare(resolve(args.profile_runs), resolve(args.target_runs), resolve(args.fio_runs),
                          args.min_stage_s)
        print(text)
        return 0
    plan = build_plan(args.cluster, args.workloads, args.fast, args.slow, args.targets, args.profile_cores,
                      args.cores, args.scale, args.repeat, args.params)
    print(describe(plan))
    if args.dry_run:
        return 0
    execute(plan, RESULTS)   # where the bench writes its runs
    runs = {role: [s.run_dir for s in plan.steps if s.role == role] for role in ("fio", "profile", "target")}
    text, _ = compare(runs["profile"], runs["target"], runs["fio"], args.min_stage_s)
    print(text)
    print("\nreproduce this table: python -m experiments.validate_model "
          + " ".join(f"--{role}-runs {','.join(p.name for p in paths)}" for role, paths in runs.items()))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="experiments.validate_model", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except (inventory_mod.InventoryError, workloads_mod.WorkloadError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
