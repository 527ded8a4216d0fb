"""analysis.parsers.workload_results on outputs the workloads' real steps wrote (tests/fixtures/workload-results,
README.md there says how they were recorded): the checks of prepare.json / validation.json, the samples of every
file with numbers, an empty folder, and damaged files that must fail naming themselves."""
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis import safeio
from analysis.parsers.workload_results import CHECK_COLUMNS, SAMPLE_COLUMNS, parse_checks, parse_samples

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "workload-results"


def samples(folder: str) -> pd.DataFrame:
    frame = parse_samples(FIXTURES / folder)
    assert list(frame.columns) == SAMPLE_COLUMNS and frame["value"].dtype == "float64"
    return frame


def value(frame: pd.DataFrame, metric: str, **metadata) -> float:
    """The one sample of `metric` with exactly this metadata; its unit is checked by the caller via unit()."""
    wanted = json.dumps(metadata, sort_keys=True, separators=(",", ":"))
    hits = frame[(frame["metric"] == metric) & (frame["metadata"] == wanted)]
    assert len(hits) == 1, f"{metric} {wanted}: {len(hits)} samples\n{frame}"
    return hits["value"].iloc[0]


def unit(frame: pd.DataFrame, metric: str) -> str:
    units = set(frame.loc[frame["metric"] == metric, "unit"])
    assert len(units) == 1, (metric, units)
    return units.pop()


def check_row(frame: pd.DataFrame, step: str) -> pd.Series:
    rows = frame[frame["step"] == step]
    assert len(rows) == 1
    return rows.iloc[0]


# ---------------------------------------------------------------- checks

def test_tpch_checks_of_a_generating_prepare_and_a_passing_validation():
    checks = parse_checks(FIXTURES / "tpch")
    assert list(checks.columns) == CHECK_COLUMNS
    assert list(checks["step"]) == ["prepare", "validate"]
    assert list(checks["file"]) == ["prepare.json", "validation.json"]
    assert str(checks["ok"].dtype) == "boolean" and str(checks["generated"].dtype) == "boolean"
    assert checks["ok"].tolist() == [pd.NA, True] and checks["generated"].tolist() == [True, pd.NA]
    assert checks["generate_s"].tolist()[0] == 2.866 and pd.isna(checks["generate_s"].tolist()[1])
    prepare = check_row(checks, "prepare")
    assert prepare["problems"] == ""
    assert json.loads(prepare["detail"]) == {"load_s": 11.056, "bytes": 3413220, "data": "/spillway/tpch/sf-0.01",
                                             "scale_factor": 0.01, "parts": 2}
    assert prepare["detail"].startswith('{"bytes":3413220,"data":')  # compact, sorted keys
    validate = check_row(checks, "validate")
    assert validate["problems"] == ""
    detail = json.loads(validate["detail"])
    assert list(detail) == ["queries"] and detail["queries"]["q16"] == {"ok": True, "rows": 296, "difference": None,
                                                                        "duckdb_s": 0.032}


def test_a_failed_tpch_validation_keeps_its_problems():
    checks = parse_checks(FIXTURES / "tpch-invalid")
    assert list(checks["step"]) == ["validate"]
    validate = check_row(checks, "validate")
    assert checks["ok"].tolist() == [False]
    assert validate["problems"] == ("q01: row 2, column sum_charge: spark '12282485.076933', duckdb '12282485.056933'; "
                                    "q16: row count differs: spark 295, duckdb 296")


def test_kmeans_checks():
    checks = parse_checks(FIXTURES / "kmeans")
    prepare, validate = check_row(checks, "prepare"), check_row(checks, "validate")
    assert checks["ok"].tolist() == [pd.NA, True] and checks["generated"].tolist() == [True, pd.NA]
    assert prepare["generate_s"] == 14.335
    assert json.loads(prepare["detail"])["generated_in_job_s"] == 2.965
    assert validate["problems"] == ""
    assert json.loads(validate["detail"])["final_cost_ratio"] == 0.9991407425099659

    failed = check_row(parse_checks(FIXTURES / "kmeans-invalid"), "validate")
    assert not failed["ok"]
    assert failed["problems"].split("; ") == [
        "true centre 4 has no found centre within 7.325: the nearest is 72.88 away",
        "true centre 8 has no found centre within 7.325: the nearest is 80.67 away",
        "final cost 7.42543e+06 is 23.1034 times the expected 321400 (allowed 1 +- 0.05)",
    ]


def test_gatk4_checks_of_a_reused_input_and_a_failed_validation():
    checks = parse_checks(FIXTURES / "gatk4")
    assert checks["ok"].tolist() == [pd.NA, True] and checks["generated"].tolist() == [False, pd.NA]
    prepare = check_row(checks, "prepare")
    assert prepare["generate_s"] == 0.0
    assert json.loads(prepare["detail"])["expected"]["duplicate_reads"] == 200
    failed = check_row(parse_checks(FIXTURES / "gatk4-invalid"), "validate")
    assert not failed["ok"]
    assert failed["problems"] == "MarkDuplicates found 200 duplicate reads, the generator planted 202"


# ---------------------------------------------------------------- samples

def test_tpch_samples():
    frame = samples("tpch")
    assert value(frame, "generate_time", generated=True) == 2.866 and unit(frame, "generate_time") == "s"
    assert value(frame, "load_time") == 11.056 and unit(frame, "load_time") == "s"
    assert value(frame, "input_size") == 3413220 and unit(frame, "input_size") == "B"
    # query-times.csv, in the order run
    spark = frame[frame["metric"] == "spark_query_time"]
    assert [json.loads(m)["query"] for m in spark["metadata"]] == ["q01", "q06", "q13", "q16", "q22"]
    assert list(spark["value"]) == [15.825, 1.809, 5.757, 3.579, 1.937] and unit(frame, "spark_query_time") == "s"
    assert value(frame, "spark_rows", query="q16") == 296 and unit(frame, "spark_rows") == "rows"
    # validation.json
    assert value(frame, "duckdb_query_time", query="q16") == 0.032 and unit(frame, "duckdb_query_time") == "s"
    assert value(frame, "duckdb_rows", query="q13") == 33 and unit(frame, "duckdb_rows") == "rows"
    assert list(frame.loc[frame["metric"] == "query_ok", "value"]) == [1.0] * 5 and unit(frame, "query_ok") == ""
    assert len(frame) == 3 + 5 * 2 + 5 * 3


def test_failed_tpch_queries_are_samples_of_zero_with_their_difference():
    frame = samples("tpch-invalid")
    ok = frame[frame["metric"] == "query_ok"]
    assert len(ok) == 22 and ok["value"].sum() == 20
    assert value(frame, "query_ok", query="q16", difference="row count differs: spark 295, duckdb 296") == 0.0
    assert value(frame, "query_ok", query="q01",
                 difference="row 2, column sum_charge: spark '12282485.076933', duckdb '12282485.056933'") == 0.0
    assert value(frame, "query_ok", query="q02") == 1.0
    assert value(frame, "duckdb_rows", query="q11") == 359


def test_websql_samples_are_tpchs_for_one_query():
    frame = samples("websql")
    assert value(frame, "generate_time", generated=True) == 37.166
    assert value(frame, "input_size") == 3320011 and unit(frame, "input_size") == "B"
    assert value(frame, "spark_query_time", query="join") == 19.126
    assert value(frame, "spark_rows", query="join") == 395 == value(frame, "duckdb_rows", query="join")
    assert value(frame, "duckdb_query_time", query="join") == 0.057
    assert value(frame, "query_ok", query="join") == 1.0
    assert len(frame) == 2 + 2 + 3
    checks = parse_checks(FIXTURES / "websql")
    assert bool(check_row(checks, "validate")["ok"]) and check_row(checks, "prepare")["generated"]
    assert json.loads(check_row(checks, "prepare")["detail"])["format"] == "csv"


def test_kmeans_samples():
    frame = samples("kmeans")
    assert value(frame, "generate_time", generated=True) == 14.335
    assert value(frame, "cache_check_time") == 0 and unit(frame, "cache_check_time") == "s"
    assert value(frame, "generate_job_time") == 2.965
    assert value(frame, "input_points") == 6000 and unit(frame, "input_points") == "points"
    assert value(frame, "input_size") == 1272525
    # iterations.csv: iteration 0 is the k-means|| initialisation
    assert value(frame, "iteration_cost", iteration=0) == 385873.745317788
    assert value(frame, "iteration_cost", iteration=2) == 248988.99885731548 and unit(frame, "iteration_cost") == ""
    assert value(frame, "iteration_time", iteration=1) == 0.316 and unit(frame, "iteration_time") == "s"
    # model.json
    assert value(frame, "train_load_time") == 1.416
    assert value(frame, "final_cost_time") == 0.095
    assert value(frame, "train_time") == 7.619
    # validation.json
    errors = frame[frame["metric"] == "centre_error"]
    assert [json.loads(m)["centre"] for m in errors["metadata"]] == list(range(10))
    assert value(frame, "centre_error", centre=4) == 0.22129157677158304
    assert value(frame, "max_centre_error") == 0.3044080068204365
    assert value(frame, "centre_tolerance") == 6.450053752309694
    assert value(frame, "expected_final_cost") == 249203.1285120294
    assert value(frame, "final_cost_ratio") == 0.9991407425099659
    assert len(frame) == 5 + 3 * 2 + 3 + 10 + 4


def test_kmeans_samples_of_a_model_with_too_few_clusters():
    frame = samples("kmeans-invalid")
    assert value(frame, "centre_error", centre=8) == 80.6728835686205
    assert value(frame, "final_cost_ratio") == 23.103364356721933


def test_gatk4_samples():
    frame = samples("gatk4")
    assert value(frame, "generate_time", generated=False) == 0
    assert value(frame, "input_reads") == 4000 and unit(frame, "input_reads") == "reads"
    assert value(frame, "planted_duplicate_reads") == 200
    assert value(frame, "known_sites") == 200 and unit(frame, "known_sites") == "sites"
    assert value(frame, "output_reads") == 4000
    assert value(frame, "output_duplicate_reads") == 200
    assert value(frame, "metrics_duplicate_reads") == 200
    assert value(frame, "expected_duplicate_reads") == 200
    assert value(frame, "recalibration_table_rows", table="RecalTable0") == 1
    assert unit(frame, "recalibration_table_rows") == "rows"
    assert value(frame, "markduplicates_read_pairs_examined", library="lib1") == 2000
    assert unit(frame, "markduplicates_read_pairs_examined") == "pairs"
    assert value(frame, "markduplicates_read_pair_duplicates", library="lib1") == 100
    assert value(frame, "markduplicates_percent_duplication", library="lib1") == 0.05
    assert unit(frame, "markduplicates_percent_duplication") == ""
    assert unit(frame, "markduplicates_estimated_library_size") == "molecules"


def test_gatk4_samples_of_a_failed_validation():
    frame = samples("gatk4-invalid")
    assert value(frame, "expected_duplicate_reads") == 202
    assert value(frame, "metrics_duplicate_reads") == 200
    assert value(frame, "output_reads") == 4000
    assert value(frame, "recalibration_table_rows", table="RecalTable2") == 2376
    assert value(frame, "markduplicates_estimated_library_size", library="lib1") == 19327
    assert value(frame, "markduplicates_unpaired_read_duplicates", library="lib1") == 0


@pytest.mark.parametrize("mode, throughput, rate, deviation, seconds", [("write", 99.07, 100.51, 12.41, 16.44),
                                                                       ("read", 130.08, 130.15, 2.88, 16.03)])
def test_dfsio_samples_are_testdfsios_figures_with_units(mode, throughput, rate, deviation, seconds):
    frame = samples(f"dfsio-{mode}")
    assert value(frame, "dfsio_throughput", mode=mode) == throughput
    assert value(frame, "dfsio_average_io_rate", mode=mode) == rate
    assert value(frame, "dfsio_io_rate_std_deviation", mode=mode) == deviation
    assert {unit(frame, m) for m in ("dfsio_throughput", "dfsio_average_io_rate", "dfsio_io_rate_std_deviation")} \
        == {"MiB/s"}
    assert value(frame, "dfsio_exec_time", mode=mode) == seconds and unit(frame, "dfsio_exec_time") == "s"
    assert value(frame, "dfsio_files", mode=mode) == 4 and unit(frame, "dfsio_files") == "files"
    # TestDFSIO's "MBytes" are 2^20 bytes: its 64 are the 4 x 16 MiB prepare.json gives as the input's size
    assert value(frame, "dfsio_bytes", mode=mode) == 67108864 == value(frame, "input_size")
    assert unit(frame, "dfsio_bytes") == "B"
    assert len(frame) == 2 + 6
    assert bool(check_row(parse_checks(FIXTURES / f"dfsio-{mode}"), "validate")["ok"])


def test_a_dfsio_result_file_without_a_section_raises_value_error_naming_it(tmp_path):
    shutil.copytree(FIXTURES / "dfsio-read", tmp_path / "dfsio")
    (tmp_path / "dfsio" / "TestDFSIO_results.log").write_text("Number of files: 4\n")
    with pytest.raises(ValueError, match="TestDFSIO_results.log: no '----- TestDFSIO ----- : <mode>' section"):
        parse_samples(tmp_path / "dfsio")


# ---------------------------------------------------------------- nothing, and damage

def test_a_folder_without_result_files_gives_empty_frames_with_the_columns(tmp_path):
    (tmp_path / "run.log").write_text("TeraSort writes no check files\n")
    (tmp_path / "teravalidate.txt").write_text("checksum\t3d3b1d4b1e1f\n")
    for frame, columns in ((parse_checks(tmp_path), CHECK_COLUMNS), (parse_samples(tmp_path), SAMPLE_COLUMNS),
                           (parse_checks(tmp_path / "absent"), CHECK_COLUMNS)):
        assert frame.empty and list(frame.columns) == columns
    assert str(parse_checks(tmp_path)["ok"].dtype) == "boolean"
    assert parse_samples(tmp_path)["value"].dtype == "float64"


def damaged_copy(tmp_path: Path, workload: str, name: str, change) -> Path:
    folder = tmp_path / workload
    shutil.copytree(FIXTURES / workload, folder)
    path = folder / name
    path.write_text(change(path.read_text()))
    return folder


@pytest.mark.parametrize("workload, name", [("tpch", "prepare.json"), ("tpch", "validation.json"),
                                            ("gatk4", "prepare.json"), ("kmeans", "validation.json")])
def test_a_truncated_check_file_raises_value_error_naming_it(tmp_path, workload, name):
    folder = damaged_copy(tmp_path, workload, name, lambda text: text[: len(text) // 2])
    for parse in (parse_checks, parse_samples):
        with pytest.raises(ValueError, match=str(folder / name)):
            parse(folder)


@pytest.mark.parametrize("workload, name", [("tpch", "query-times.csv"), ("kmeans", "iterations.csv"),
                                            ("kmeans", "model.json"), ("gatk4", "md.metrics"),
                                            ("dfsio-write", "TestDFSIO_results.log")])
def test_a_truncated_result_file_raises_value_error_naming_it(tmp_path, workload, name):
    # Cut inside the second data line, or (md.metrics) inside the LIBRARY table's header.
    def truncate(text):
        if name == "md.metrics":
            return text[: text.index("LIBRARY") + 20]
        if name.endswith(".csv"):
            lines = text.splitlines(keepends=True)
            return "".join(lines[:2]) + lines[2][:4]
        return text[: len(text) // 2]
    folder = damaged_copy(tmp_path, workload, name, truncate)
    with pytest.raises(ValueError, match=str(folder / name)):
        parse_samples(folder)


@pytest.mark.parametrize("workload, change, message", [
    ("tpch-invalid", lambda doc: doc["queries"]["q03"].update(rows="ten"), "queries.q03.rows is 'ten', not a number"),
    ("tpch-invalid", lambda doc: doc.update(queries=["q01"]), "queries is \\['q01'\\], not a JSON object"),
    ("tpch-invalid", lambda doc: doc["queries"]["q03"].pop("ok"), "queries.q03.ok is None"),
    ("kmeans-invalid", lambda doc: doc.update(centre_errors=[0.3, None]), "centre_errors\\[1\\] is None"),
    ("gatk4-invalid", lambda doc: doc.update(output_bam=4000), "output_bam is 4000, not a JSON object"),
    ("gatk4-invalid", lambda doc: doc.update(expected_duplicate_reads=True), "expected_duplicate_reads is True"),
])
def test_a_validation_json_of_the_wrong_shape_raises_value_error_naming_it(tmp_path, workload, change, message):
    def rewrite(text):
        doc = json.loads(text)
        change(doc)
        return json.dumps(doc)
    folder = damaged_copy(tmp_path, workload, "validation.json", rewrite)
    with pytest.raises(ValueError, match=f"{folder / 'validation.json'}: {message}"):
        parse_samples(folder)


@pytest.mark.parametrize("name, change, message", [
    ("validation.json", lambda doc: doc.pop("ok"), "`ok` is None, not true or false"),
    ("validation.json", lambda doc: doc.update(problems="q01 differs"), "`problems` is 'q01 differs'"),
    ("prepare.json", lambda doc: doc.update(generated="yes"), "`generated` is 'yes'"),
    ("prepare.json", lambda doc: doc.update(generate_s=[1]), "generate_s is \\[1\\], not a number"),
])
def test_check_files_of_the_wrong_shape_raise_value_error_naming_them(tmp_path, name, change, message):
    def rewrite(text):
        doc = json.loads(text)
        change(doc)
        return json.dumps(doc)
    folder = damaged_copy(tmp_path, "tpch", name, rewrite)
    with pytest.raises(ValueError, match=f"{folder / name}: {message}"):
        parse_checks(folder)


def test_a_json_array_is_not_a_check_file(tmp_path):
    (tmp_path / "validation.json").write_text("[true]")
    with pytest.raises(ValueError, match=f"{tmp_path / 'validation.json'}: a JSON list, not an object"):
        parse_checks(tmp_path)


def test_a_symlinked_check_file_is_refused_not_followed(tmp_path):
    os.symlink(FIXTURES / "tpch" / "validation.json", tmp_path / "validation.json")
    with pytest.raises(safeio.Refused, match="symbolic link"):
        parse_checks(tmp_path)
    with pytest.raises(safeio.Refused, match="symbolic link"):
        parse_samples(tmp_path)
