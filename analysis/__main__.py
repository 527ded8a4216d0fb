"""python -m analysis {tables <run-dir> | report <run-dir|run-id|latest> | stages <event log file or folder>
                    | compare RUN RUN [RUN ...] [--out DIR] [--noise-pct PCT] [--baseline RUN] [--max-slowdown PCT%]
                    | predict <run> --to <backend | hdfs=a,local=b> [--cores N] [--nodes N] [--measured RUN...] [--fio RUN...]
                    [--json]}"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import safeio
from .parsers import eventlog
from run_layout import resolve_run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    tables = sub.add_parser("tables", help="parse raw/ of a run into tables/*.parquet")
    tables.add_argument("run", help="run directory, run id under results/, or `latest`")
    report = sub.add_parser("report", help="write report.html in the run directory (tables first if missing)")
    report.add_argument("run", nargs="?", default="latest", help="run directory, run id, or `latest` (default)")
    report.add_argument("--rebuild-tables", action="store_true", help="re-parse raw/ even if tables exist")
    report.add_argument("--thresholds", type=Path, help="the rules' thresholds from a JSON file, {rule: {threshold: "
                        "number}} (docs/findings.md, \"Thresholds from a file\")")
    stages = sub.add_parser("stages", help="CSV of Spark stage attempts of an event log (file or folder); "
                                                "columns in docs/tables.md, exit 2 if it is no event log")
    stages.add_argument("path", type=Path)
    compare = sub.add_parser("compare", help="compare.html + tables/*.csv|parquet across runs (the first is the "
                                             "baseline); exit 2 on fewer than 2 runs or a path that is no run")
    compare.add_argument("runs", nargs="*", help="run directories or run ids under results/ (`latest` allowed)")
    compare.add_argument("--out", type=Path, help="output folder (default results/compare-<id>-vs-<id>...)")
    compare.add_argument("--noise-pct", type=float, help="this host's measured run-to-run noise in %% (the same "
                                                         "configuration run twice): a difference must exceed it")
    compare.add_argument("--baseline", help="regression gate: the run every verdict is against (make's BASELINE; "
                                            "added to the runs if not among them)")
    compare.add_argument("--max-slowdown", help="regression gate: the significant slowdown allowed, `5%%` (make's "
                                                "MAX_SLOWDOWN); exit 1 on a significant slowdown beyond it")
    compare.add_argument("--thresholds", type=Path, help="the rules' thresholds from a JSON file (as for report)")
    predict = sub.add_parser("predict", help="I/O-aware model: fit on the run's configurations, predict stage times "
                                             "on another backend/placement/cores/nodes (docs/models.md)")
    predict.add_argument("run", help="run directory, run id under results/, or `latest`")
    predict.add_argument("--to", required=True, help="a backend or profile (`nvme`) or `hdfs=<backend>,local=<backend>`")
    predict.add_argument("--cores", type=int, help="executor cores per node P (default: the run's)")
    predict.add_argument("--nodes", type=int, help="worker nodes N (default: the run's)")
    predict.add_argument("--measured", nargs="*", default=[], help="other runs holding measured runs of the target")
    predict.add_argument("--fio", nargs="*", default=[], help="other runs whose fio sweep gives the target backend's "
                                                             "bandwidth (default: the run's own and --measured's, "
                                                             "else the storage profile's caps)")
    predict.add_argument("--json", action="store_true", help="JSON (units in every key) instead of the table")
    args = parser.parse_args(argv)

    try:
        if args.command == "tables":
            from .tables import write_tables
            run_dir = resolve_run_dir(args.run)
            for name, path in write_tables(run_dir).items():
                print(path)
        elif args.command == "report":
            from .report_page import write_report
            from .tables import write_tables
            from .findings.rules import RULES
            from .findings.thresholds import ThresholdError, load
            try:   # refused before the run is read or anything written; read once
                overrides = load(args.thresholds, RULES) if args.thresholds is not None else {}
            except ThresholdError as error:
                print(f"analysis report: {error}", file=sys.stderr)
                return 2
            run_dir = resolve_run_dir(args.run)
            if args.rebuild_tables:
                write_tables(run_dir)
            print(write_report(run_dir, args.thresholds, overrides))
        elif args.command == "compare":
            from .compare_page import CompareError, compare_runs
            try:
                written = compare_runs(args.runs, args.out, args.noise_pct, args.baseline, args.max_slowdown,
                                       args.thresholds)
            except CompareError as error:
                print(f"analysis compare: {error}", file=sys.stderr)
                return 2
            for line in written.gate_lines:
                print(line)
            print(written.html)
            if written.gate_failed:
                return 1
        elif args.command == "predict":
            from .predict import PredictError, main as predict_main
            try:
                print(predict_main(args.run, args.to, args.cores, args.nodes, args.json, args.measured, args.fio))
            except PredictError as error:
                print(f"analysis predict: {error}", file=sys.stderr)
                return 2
        elif args.command == "stages":
            # The one file named on the command line is the user's choice: a link there is followed (the
            # rules of analysis.safeio still apply to what it leads to).
            eventlog.parse_event_logs(args.path.resolve()).stages.to_csv(sys.stdout, index=False)
    except (FileNotFoundError, eventlog.MissingCodec, eventlog.NotAnEventLog, safeio.Refused) as error:
        print(f"analysis: {error}", file=sys.stderr)
        return 2
    return 0


def exit_now(code: int) -> None:
    """Exit with `code` once stdout and stderr are flushed, without the interpreter's teardown: Arrow's native
    thread pools, torn down there while a worker is still joinable, abort the process now and then with 'terminate
    called without an active exception' (SIGABRT, exit -6) after the work is done (apache/arrow#34314); seen in
    make test on 2026-11-25. Every file the commands write is closed before main() returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
