"""What the workloads' own steps write into `$SPILLWAY_OUT` (fetched to `raw/<host>/workload/<workload-id>/`):
their checks, and every number they measure or verify, as samples.

`parse_checks(folder)`: one row per check file present (docs/architecture.md, "Workload manifest"):

| column | type | from |
|---|---|---|
| step | text | "prepare" (prepare.json) or "validate" (validation.json) |
| file | text | the file's name |
| ok | boolean, NA for prepare | validation.json `ok` |
| generated | boolean, NA for validate | prepare.json `generated` (input made by this prepare, not reused) |
| generate_s | float, s | prepare.json `generate_s` (0 when the input was reused); NaN for validate |
| problems | text | `problems` joined with "; " ("" when none) |
| detail | text | every other key of the file, compact JSON with sorted keys |

`parse_samples(folder)`: one row per number worth a table, after PerfKit Benchmarker's samples: `metric`, `value`
(float), `unit` ("" for a pure number or a count of nothing in particular) and `metadata` (compact JSON, sorted
keys; "{}" when none). Which file gives which metric (a file or key that is absent gives nothing; the workload a
validation.json comes from is told by its keys, so a sweep's or repetition's workload id does not matter):

| file (workload) | metric | unit | metadata |
|---|---|---|---|
| prepare.json (all) | generate_time (`generate_s`) | s | generated |
| prepare.json (tpch) | load_time (`load_s`, `hadoop fs -put` of the tables) | s | |
| prepare.json (tpch, kmeans, terasort, websql, wordcount, sort) | input_size (`bytes`: the input's size in HDFS) | B | |
| prepare.json (terasort) | input_rows (`rows`, TeraGen's) | rows | |
| prepare.json (kmeans) | input_points (`points`) | points | |
| prepare.json (kmeans) | cache_check_time (`check_s`, finding the cached input) | s | |
| prepare.json (kmeans) | generate_job_time (`generated_in_job_s`, the job that made the input in use) | s | |
| prepare.json (gatk4, synthetic) | input_reads, planted_duplicate_reads (`expected`) | reads | |
| prepare.json (gatk4, synthetic) | known_sites (`expected`) | sites | |
| query-times.csv (tpch, websql run) | spark_query_time (`seconds`), spark_rows (`rows`) | s, rows | query |
| validation.json (tpch, websql) | duckdb_query_time (`duckdb_s`), duckdb_rows (`rows`) | s, rows | query |
| validation.json (tpch, websql) | query_ok (1 when Spark's result equals DuckDB's, else 0) | | query, difference |
| iterations.csv (kmeans run) | iteration_cost (sum of squared distances), iteration_time | "", s | iteration (0: k-means\\|\\|) |
| model.json (kmeans run) | train_load_time (`load_seconds`: read and cache the points) | s | |
| model.json (kmeans run) | final_cost_time (`final_cost_seconds`), train_time (`total_seconds`) | s | |
| validation.json (kmeans) | centre_error (true centre to its nearest found one) | "" | centre |
| validation.json (kmeans) | max_centre_error, centre_tolerance (`tolerance`) | "" | |
| validation.json (kmeans) | expected_final_cost, final_cost_ratio | "" | |
| validation.json (gatk4) | output_reads, output_duplicate_reads (final BAM, flag 0x400) | reads | |
| validation.json (gatk4) | metrics_duplicate_reads, expected_duplicate_reads | reads | |
| validation.json (gatk4) | recalibration_table_rows | rows | table |
| md.metrics (gatk4, copied by validate) | markduplicates_<column> of the LIBRARY table, lower case | see below | library |
| TestDFSIO_results.log (dfsio run) | dfsio_throughput (`Throughput mb/sec`: MiB over the tasks' summed time), dfsio_average_io_rate (`Average IO rate mb/sec`: mean of the tasks' rates), dfsio_io_rate_std_deviation | MiB/s | mode |
| TestDFSIO_results.log (dfsio run) | dfsio_exec_time (`Test exec time sec`, the job's wall time), dfsio_files, dfsio_bytes (`Total MBytes processed` x 2^20) | s, files, B | mode |

MarkDuplicates columns: *_READS_EXAMINED, UNMAPPED_READS, SECONDARY_OR_SUPPLEMENTARY_RDS, UNPAIRED_READ_DUPLICATES
in reads; READ_PAIRS_EXAMINED, READ_PAIR_DUPLICATES, READ_PAIR_OPTICAL_DUPLICATES in pairs; PERCENT_DUPLICATION
a fraction ("", Picard's name notwithstanding); ESTIMATED_LIBRARY_SIZE in molecules. Its coverage histogram is
left out. TestDFSIO's "mb" is its MEGA, 2^20 bytes: MiB here. Not read: the costs list of kmeans' validation.json (iterations.csv has them), recal.table (its row
counts are in validation.json; a real genome's is large), the steps' logs (parsers/step_logs.py). TeraSort writes
prepare.json but no validation.json (its validation is TeraValidate's exit status and `teravalidate.txt`, a
checksum) and fio-sweep's JSON is fio's (parsers/fio.py): its folder gives no rows here.

Reads go through analysis.safeio. A file that is not what its writer writes (no JSON, a CSV with other
columns, text where a number belongs) raises ValueError naming it; a refused one (a symlink, a FIFO, over the
cap) raises safeio.Refused. The caller records either in the `sources` table.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from .. import safeio

# safeio has no size cap of its own for workload outputs; these files are of the manifest's order (kilobytes,
# a K-means model with many large centres some MB), so they share its cap.
_KIND = "manifest"

CHECK_FILES = (("prepare", "prepare.json"), ("validate", "validation.json"))
CHECK_COLUMNS = ["step", "file", "ok", "generated", "generate_s", "problems", "detail"]
SAMPLE_COLUMNS = ["metric", "value", "unit", "metadata"]
# The convention's keys of each file, columns of their own; whatever else a workload writes goes to `detail`.
_CHECK_KEYS = {"prepare": ("generated", "generate_s", "problems"), "validate": ("ok", "problems")}

# The samples that are one key of a JSON object a step writes, by object: key -> (metric, unit).
_KEYED_SAMPLES = {
    "prepare": {"generate_s": ("generate_time", "s"), "load_s": ("load_time", "s"), "bytes": ("input_size", "B"),
                "points": ("input_points", "points"), "rows": ("input_rows", "rows"),
                "check_s": ("cache_check_time", "s"), "generated_in_job_s": ("generate_job_time", "s")},
    "gatk4 expected": {"reads": ("input_reads", "reads"), "duplicate_reads": ("planted_duplicate_reads", "reads"),
                       "known_sites": ("known_sites", "sites")},
    "kmeans model": {"load_seconds": ("train_load_time", "s"), "final_cost_seconds": ("final_cost_time", "s"),
                     "total_seconds": ("train_time", "s")},
    "kmeans validation": {"max_centre_error": ("max_centre_error", ""), "tolerance": ("centre_tolerance", ""),
                          "expected_final_cost": ("expected_final_cost", ""),
                          "final_cost_ratio": ("final_cost_ratio", "")},
    "gatk4 output": {"reads": ("output_reads", "reads"), "duplicate_reads": ("output_duplicate_reads", "reads")},
    "gatk4 validation": {"metrics_duplicate_reads": ("metrics_duplicate_reads", "reads"),
                         "expected_duplicate_reads": ("expected_duplicate_reads", "reads")},
}
# TestDFSIO's result file: a header per run, then its figures; "mb" is its MEGA, 2^20 bytes.
_DFSIO_HEADER = "----- TestDFSIO ----- : "
_DFSIO_FIELDS = {  # label: metric, unit, factor
    "Number of files": ("dfsio_files", "files", 1),
    "Total MBytes processed": ("dfsio_bytes", "B", 1 << 20),
    "Throughput mb/sec": ("dfsio_throughput", "MiB/s", 1),
    "Average IO rate mb/sec": ("dfsio_average_io_rate", "MiB/s", 1),
    "IO rate std deviation": ("dfsio_io_rate_std_deviation", "MiB/s", 1),
    "Test exec time sec": ("dfsio_exec_time", "s", 1),
}
# What validate.py reads of it too: without these the file is cut short or not MarkDuplicates'.
_MARKDUPLICATES_REQUIRED = ("READ_PAIRS_EXAMINED", "UNPAIRED_READ_DUPLICATES", "READ_PAIR_DUPLICATES")
_MARKDUPLICATES_UNITS = {
    "UNPAIRED_READS_EXAMINED": "reads", "READ_PAIRS_EXAMINED": "pairs", "SECONDARY_OR_SUPPLEMENTARY_RDS": "reads",
    "UNMAPPED_READS": "reads", "UNPAIRED_READ_DUPLICATES": "reads", "READ_PAIR_DUPLICATES": "pairs",
    "READ_PAIR_OPTICAL_DUPLICATES": "pairs", "PERCENT_DUPLICATION": "", "ESTIMATED_LIBRARY_SIZE": "molecules",
}


# ---------------------------------------------------------------- checks

def parse_checks(folder: Path) -> pd.DataFrame:
    """One row per prepare.json / validation.json in `folder` (columns CHECK_COLUMNS), an empty frame with
    those columns when neither is there."""
    rows = []
    for step, name in CHECK_FILES:
        path = Path(folder) / name
        if not os.path.lexists(path):
            continue
        doc = _read_object(path)
        with _structure(path):
            ok = doc.get("ok") if step == "validate" else pd.NA
            if step == "validate" and not isinstance(ok, bool):
                raise ValueError(f"`ok` is {_short(ok)}, not true or false")
            generated = doc.get("generated") if step == "prepare" else None
            if generated is not None and not isinstance(generated, bool):
                raise ValueError(f"`generated` is {_short(generated)}, not true or false")
            generate_s = doc.get("generate_s") if step == "prepare" else None
            own = _CHECK_KEYS[step]
            rows.append({
                "step": step,
                "file": name,
                "ok": ok,
                "generated": pd.NA if generated is None else generated,
                "generate_s": math.nan if generate_s is None else _number(generate_s, "generate_s"),
                "problems": "; ".join(_problems(doc.get("problems"))),
                "detail": _compact({key: value for key, value in doc.items() if key not in own}),
            })
    return _frame(rows, CHECK_COLUMNS, {"ok": "boolean", "generated": "boolean", "generate_s": "float64"})


def _problems(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"`problems` is {_short(value)}, not a list of texts")
    return value


# ---------------------------------------------------------------- samples

def parse_samples(folder: Path) -> pd.DataFrame:
    """The numbers the workload's steps wrote into `folder` as samples (columns SAMPLE_COLUMNS; the module
    docstring lists them); an empty frame with those columns when there are none."""
    rows: list[dict] = []
    for path in sample_files(folder):
        with _structure(path):
            rows += [{"metric": metric, "value": value, "unit": unit, "metadata": _compact(metadata)}
                     for metric, value, unit, metadata in _SAMPLE_PARSERS[path.name](path)]
    return _frame(rows, SAMPLE_COLUMNS, {"value": "float64"})


def sample_files(folder: Path) -> list[Path]:
    """The files of `folder` that parse_samples reads (symbolic links included: reading refuses them)."""
    return [Path(folder) / name for name in SAMPLE_FILE_NAMES if os.path.lexists(Path(folder) / name)]


def check_files(folder: Path) -> list[Path]:
    """The files of `folder` that parse_checks reads."""
    return [Path(folder) / name for _, name in CHECK_FILES if os.path.lexists(Path(folder) / name)]


Sample = tuple[str, float, str, dict]


def _prepare_samples(path: Path) -> Iterator[Sample]:
    doc = _read_object(path)
    generated = doc.get("generated")
    for key, (metric, unit) in _KEYED_SAMPLES["prepare"].items():
        if doc.get(key) is not None:
            metadata = {"generated": generated} if key == "generate_s" and isinstance(generated, bool) else {}
            yield metric, _number(doc[key], key), unit, metadata
    expected = doc.get("expected")
    if expected is not None:
        _require(expected, dict, "expected")
        yield from _keyed_samples(expected, "gatk4 expected", "expected.")


def _query_time_samples(path: Path) -> Iterator[Sample]:
    for line, row in _csv_rows(path, ["query", "seconds", "rows"]):
        metadata = {"query": row["query"]}
        yield "spark_query_time", _number(row["seconds"], f"line {line}, seconds"), "s", metadata
        yield "spark_rows", _number(row["rows"], f"line {line}, rows"), "rows", metadata


def _iteration_samples(path: Path) -> Iterator[Sample]:
    for line, row in _csv_rows(path, ["iteration", "cost", "seconds"]):
        iteration = _number(row["iteration"], f"line {line}, iteration")
        if not iteration.is_integer():
            raise ValueError(f"line {line}: iteration {row['iteration']!r} is not a whole number")
        metadata = {"iteration": int(iteration)}
        yield "iteration_cost", _number(row["cost"], f"line {line}, cost"), "", metadata
        yield "iteration_time", _number(row["seconds"], f"line {line}, seconds"), "s", metadata


def _model_samples(path: Path) -> Iterator[Sample]:
    yield from _keyed_samples(_read_object(path), "kmeans model")


def _validation_samples(path: Path) -> Iterator[Sample]:
    doc = _read_object(path)
    if "queries" in doc:
        yield from _tpch_validation_samples(doc["queries"])
    if "centre_errors" in doc:
        errors = _require(doc["centre_errors"], list, "centre_errors")
        for index, error in enumerate(errors):
            yield "centre_error", _number(error, f"centre_errors[{index}]"), "", {"centre": index}
        yield from _keyed_samples(doc, "kmeans validation")
    if "output_bam" in doc or "metrics_duplicate_reads" in doc:
        scan = _require(doc.get("output_bam") or {}, dict, "output_bam")
        yield from _keyed_samples(scan, "gatk4 output", "output_bam.")
        yield from _keyed_samples(doc, "gatk4 validation")
        tables = _require(doc.get("recalibration_table_rows") or {}, dict, "recalibration_table_rows")
        for table, count in tables.items():
            yield ("recalibration_table_rows", _number(count, f"recalibration_table_rows.{table}"), "rows",
                   {"table": table})


def _tpch_validation_samples(queries: Any) -> Iterator[Sample]:
    for query, result in _require(queries, dict, "queries").items():
        where = f"queries.{query}"
        _require(result, dict, where)
        metadata = {"query": query}
        if result.get("duckdb_s") is not None:
            yield "duckdb_query_time", _number(result["duckdb_s"], f"{where}.duckdb_s"), "s", metadata
        if result.get("rows") is not None:
            yield "duckdb_rows", _number(result["rows"], f"{where}.rows"), "rows", metadata
        ok = result.get("ok")
        if not isinstance(ok, bool):
            raise ValueError(f"{where}.ok is {_short(ok)}, not true or false")
        difference = result.get("difference")
        if difference is not None and not isinstance(difference, str):
            raise ValueError(f"{where}.difference is {_short(difference)}, not a text")
        yield "query_ok", float(ok), "", {**metadata, **({"difference": difference} if difference else {})}


def _markduplicates_samples(path: Path) -> Iterator[Sample]:
    """The LIBRARY table of a Picard/GATK metrics file: its header line starts with LIBRARY, one line per
    library follows, a blank line (or the end) closes it."""
    lines = safeio.read_text(path, _KIND).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("LIBRARY\t")), None)
    if start is None:
        raise ValueError("no LIBRARY table (not a MarkDuplicates metrics file)")
    columns = lines[start].split("\t")
    missing = [column for column in _MARKDUPLICATES_REQUIRED if column not in columns]
    if missing:
        raise ValueError(f"line {start + 1}: the LIBRARY table has no {', '.join(missing)} column")
    libraries = 0
    for number, line in enumerate(lines[start + 1:], start + 2):
        if not line.strip():
            break
        libraries += 1
        cells = line.split("\t")
        if len(cells) != len(columns):
            raise ValueError(f"line {number}: {len(cells)} fields under a header of {len(columns)}")
        row = dict(zip(columns, cells))
        metadata = {"library": row["LIBRARY"]}
        for column, unit in _MARKDUPLICATES_UNITS.items():
            # Picard leaves a value it could not estimate (ESTIMATED_LIBRARY_SIZE without pairs) empty.
            if row.get(column, "") != "":
                yield (f"markduplicates_{column.lower()}", _number(row[column], f"line {number}, {column}"), unit,
                       metadata)
    if not libraries:
        raise ValueError(f"line {start + 1}: the LIBRARY table has no rows (MarkDuplicates writes one per library)")


def _dfsio_samples(path: Path) -> Iterator[Sample]:
    """Each section TestDFSIO's client appended (`----- TestDFSIO ----- : <mode>`, then `label: value` lines),
    all six figures of it (a section cut short raises)."""
    sections: list[tuple[int, str, dict]] = []
    for number, line in enumerate(safeio.read_text(path, _KIND).splitlines(), 1):
        if line.startswith(_DFSIO_HEADER):
            mode = line[len(_DFSIO_HEADER):].strip()
            if not mode:
                raise ValueError(f"line {number}: a section without its mode")
            sections.append((number, mode, {}))
        elif sections and line.partition(":")[0].strip() in _DFSIO_FIELDS:
            label, _, value = line.partition(":")
            sections[-1][2][label.strip()] = _number(value.strip(), f"line {number}, {label.strip()}")
    if not sections:
        raise ValueError(f"no '{_DFSIO_HEADER}<mode>' section (not TestDFSIO's result file)")
    for number, mode, values in sections:
        missing = [label for label in _DFSIO_FIELDS if label not in values]
        if missing:
            raise ValueError(f"line {number}: the {mode} section has no {', '.join(missing)}")
        for label, (metric, unit, factor) in _DFSIO_FIELDS.items():
            yield metric, values[label] * factor, unit, {"mode": mode}


def _keyed_samples(doc: dict, group: str, prefix: str = "") -> Iterator[Sample]:
    for key, (metric, unit) in _KEYED_SAMPLES[group].items():
        if doc.get(key) is not None:
            yield metric, _number(doc[key], prefix + key), unit, {}


# ---------------------------------------------------------------- reading

def _read_object(path: Path) -> dict:
    try:
        doc = safeio.read_json(path, _KIND)
    except ValueError as error:  # json's and UTF-8's errors name neither the file nor what was expected
        raise ValueError(f"{path}: not a JSON document ({error})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a JSON {type(doc).__name__}, not an object")
    return doc


def _csv_rows(path: Path, header: list[str]) -> Iterator[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(safeio.read_text(path, _KIND)))
    found = next(reader, None)
    if found != header:
        raise ValueError(f"header {found!r}, expected {','.join(header)}")
    for number, cells in enumerate(reader, 2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise ValueError(f"line {number}: {len(cells)} fields, expected {len(header)}")
        yield number, dict(zip(header, cells))


@contextlib.contextmanager
def _structure(path: Path) -> Iterator[None]:
    """Errors about a file's content name the file. The parsers check what they read; KeyError, TypeError and
    the like are turned into ValueError as well, so that a shape not foreseen is still reported as the file's
    fault and not as a crash of the analysis."""
    try:
        yield
    except ValueError as error:
        message = str(error)
        raise ValueError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"{path}: unexpected content ({type(error).__name__}: {error})") from None


def _number(value: Any, where: str) -> float:
    """A JSON number, or the text of one (CSV, metrics files), as a float; ValueError naming `where` else."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{where} is {_short(value)}, not a number")
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{where} is {_short(value)}, not a number") from None


def _require(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{where} is {_short(value)}, not a JSON {'object' if kind is dict else 'array'}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _frame(rows: list[dict], columns: list[str], dtypes: dict[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=columns)
    for column in columns:
        frame[column] = frame[column].astype(dtypes.get(column, object))
    return frame


# file name -> the samples it gives, in the order the steps write them
_SAMPLE_PARSERS = {"prepare.json": _prepare_samples, "query-times.csv": _query_time_samples,
                   "iterations.csv": _iteration_samples, "model.json": _model_samples,
                   "TestDFSIO_results.log": _dfsio_samples,
                   "validation.json": _validation_samples, "md.metrics": _markduplicates_samples}
SAMPLE_FILE_NAMES = tuple(_SAMPLE_PARSERS)
