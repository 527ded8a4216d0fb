"""The spark role's stage marker listener, for real: a tiny two-stage job in Spark local mode with the listener
(built by spark-build-job as provisioning builds it) pushing to a real Pushgateway scraped by a real Prometheus;
and the same job against a dead Pushgateway, which must still succeed with one warning."""
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "workloads"), str(REPO / "tests" / "spillway")]
import prometheus_servers  # noqa: E402
from spark_local import compile_jar, spark_jars_present, submit  # noqa: E402

LISTENER_SRC = REPO / "playbooks" / "roles" / "spark" / "files" / "stage-markers" / "src"
LISTENER = "spillway.monitoring.StageMarkerListener"
JOB = """
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

public final class TwoStages {
    public static void main(String[] args) {
        SparkSession spark = SparkSession.builder().appName("two-stages").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        List<Integer> numbers = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            numbers.add(i);
        }
        long keys = sc.parallelize(numbers, 2).mapToPair(i -> new Tuple2<>(i % 7, i))
                .reduceByKey(Integer::sum).count();
        System.out.println("{\\"keys\\": " + keys + "}");
        spark.stop();
    }
}
"""

pytestmark = pytest.mark.skipif(not spark_jars_present("spark-core") or not prometheus_servers.binaries_present(),
                                reason="needs the Spark jars (make setup) and the Debian prometheus packages")


@pytest.fixture(scope="module")
def jars(tmp_path_factory):
    work = tmp_path_factory.mktemp("stage-markers")
    (work / "job").mkdir()
    (work / "job" / "TwoStages.java").write_text(JOB)
    return (compile_jar(LISTENER_SRC, work / "spillway-stage-markers.jar", LISTENER),
            compile_jar(work / "job", work / "two-stages.jar", "TwoStages"))


def run_job(work, jars, pushgateway_url):
    listener, job = jars
    started = time.time()
    result = submit(work, job, classpath=[listener], conf=[
        f"spark.extraListeners={LISTENER}", f"spark.spillway.pushgateway.url={pushgateway_url}",
        "spark.spillway.run.id=run-test", "spark.spillway.workload.id=two-stages-r1"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == '{"keys": 7}'
    return started, time.time(), result


def test_every_stage_attempt_gets_a_start_and_an_end_marker(tmp_path, jars):
    with prometheus_servers.running(tmp_path / "prometheus") as servers:
        started, ended, result = run_job(tmp_path, jars, servers.pushgateway_url)
        # Each marker is pushed as its stage starts or ends, and Prometheus takes it at its next scrape: wait until
        # a scrape holds both stages' ends (seen only partly, the job's last push had not been scraped yet).
        try:
            prometheus_servers.wait_until(lambda: {s["metric"]["stage_id"] for s in servers.query(
                'spillway_stage_end_timestamp_seconds{run_id="run-test"}')} >= {"0", "1"}, 30, "both stages' ends")
        except TimeoutError:
            pass  # the assertions below say what is missing
        ends = servers.query('spillway_stage_end_timestamp_seconds{run_id="run-test"}')
        starts = servers.query('spillway_stage_start_timestamp_seconds{run_id="run-test"}')
    seen = "\n".join(str(s["metric"]) for s in starts + ends) + "\n" + result.stderr[-3000:]

    def attempt(series):
        return series["metric"]["stage_id"], series["metric"]["attempt"]

    # reduceByKey + count: a shuffle map stage 0 and a result stage 1. A loaded machine may make Spark retry a
    # stage (a lost executor, a fetch failure): every attempt then has its own markers, and the last one succeeds.
    start_at = {attempt(s): float(s["value"][1]) for s in starts}
    end_at = {attempt(s): float(s["value"][1]) for s in ends}
    assert len(start_at) == len(starts) and len(end_at) == len(ends), f"one series per attempt:\n{seen}"
    assert set(end_at) == set(start_at), f"an attempt without its start or its end:\n{seen}"
    assert {stage for stage, _ in end_at} == {"0", "1"}, seen
    final = {stage: max((a for s, a in end_at if s == stage), key=int) for stage in ("0", "1")}
    for series in ends:
        labels = series["metric"]
        assert labels["workload_id"] == "two-stages-r1" and labels["job"] == "spillway_stage", seen
        assert labels["app_id"].startswith("local-") and " at TwoStages.java:" in labels["stage_name"], seen
        if labels["attempt"] == final[labels["stage_id"]]:
            assert labels["status"] == "succeeded", seen
    for key, end in end_at.items():
        assert started <= start_at[key] <= end <= ended, seen
    # the result stage's final attempt runs after the map stage's final attempt has ended
    assert start_at[("1", final["1"])] >= end_at[("0", final["0"])], seen


def test_a_dead_pushgateway_is_one_warning_and_the_job_succeeds(tmp_path, jars):
    dead = f"http://127.0.0.1:{prometheus_servers.free_port()}"
    _, _, result = run_job(tmp_path, jars, dead)
    warnings = [line for line in result.stderr.splitlines() if "Stage markers:" in line]
    assert len(warnings) == 1 and dead in warnings[0] and "ConnectException" in warnings[0]


def test_without_a_pushgateway_url_the_listener_stays_silent(tmp_path, jars):
    _, _, result = run_job(tmp_path, jars, "")
    assert "Stage markers" not in result.stderr
