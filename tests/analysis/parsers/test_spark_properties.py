"""The `spark_properties` table from real recorded event logs: the eventlog collector's YARN application
(tests/fixtures/collectors/eventlog), the tiny local[2] jobs of tests/fixtures/tools/spark-eventlog and its Spark 1.x
log; and the allow-list holding against secrets planted in a copy of the recorded YARN log's environment update."""
import json

import pytest

from analysis.parsers.eventlog import parse_event_logs
from analysis.parsers.eventlog_source import spark_tables
from analysis.parsers.spark_properties import ALLOWED, MAX_VALUE_CHARS, PROPERTIES_COLUMNS
from conftest import FIXTURES, TOOLS

YARN_LOG = FIXTURES / "collectors" / "eventlog" / "application_1795280718534_0006"
ENVIRONMENT_UPDATE = '{"Event":"SparkListenerEnvironmentUpdate"'


def _environment(path):
    line = next(line for line in path.read_text().splitlines() if line.startswith(ENVIRONMENT_UPDATE))
    return json.loads(line)


def test_a_yarn_applications_storage_properties():
    log = parse_event_logs(YARN_LOG)
    properties = log.properties
    assert list(properties.columns) == PROPERTIES_COLUMNS
    assert set(properties["app_id"]) == {"application_1795280718534_0006"}
    said = dict(zip(properties["name"], properties["value"]))
    environment = _environment(YARN_LOG)
    # every kept value is the log's own (spark.master's is a bare word already), and nothing outside the allow-list
    for name, value in said.items():
        section = "Spark Properties" if name.startswith("spark.") else "Hadoop Properties"
        assert environment[section][name] == value
    assert set(said) <= ALLOWED
    assert said["yarn.nodemanager.local-dirs"] == "/var/lib/spillway/local/mnt/ssd/local/yarn"
    assert said["spark.local.dir"] == "/var/lib/spillway/local/mnt/ssd/local/spark"
    assert (said["dfs.blocksize"], said["spark.master"], said["spark.executor.memory"]) == ("128m", "yarn", "1g")
    # of about a thousand Hadoop properties the log carries, five names are kept
    assert len(environment["Hadoop Properties"]) > 900
    assert sorted(name for name in said if not name.startswith("spark.")) == [
        "dfs.blocksize", "dfs.datanode.data.dir", "dfs.replication", "io.file.buffer.size",
        "yarn.nodemanager.local-dirs"]


def test_a_local_job_and_a_spark_1_log():
    local = parse_event_logs(TOOLS / "spark-eventlog" / "local-1795280525362").properties
    assert dict(zip(local["name"], local["value"]))["spark.master"] == "local[2]"
    old = parse_event_logs(TOOLS / "spark-eventlog" / "old-versions" / "event_log_1")
    assert old.applications["spark_version"].item() == "1.5.1"          # no Hadoop properties before Spark 3
    assert dict(zip(old.properties["name"], old.properties["value"])) == {
        "spark.executor.instances": "900", "spark.executor.memory": "1g",
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer"}


def test_every_log_of_a_folder_has_its_own_rows():
    properties = parse_event_logs(TOOLS / "spark-eventlog").properties
    assert set(properties["app_id"]) == {"local-1795280525362", "local-1795280624813", "local-1795280914365"}
    assert not properties.duplicated(["app_id", "name"]).any()


SECRETS = {"spark.hadoop.fs.s3a.secret.key": "AKIA-SECRET-1", "spark.ssl.keyStorePassword": "hunter2-SECRET",
           "spark.authenticate.secret": "SECRET-3", "spark.yarn.token": "SECRET-TOKEN"}


@pytest.fixture
def planted(tmp_path):
    """The recorded YARN log with secrets, a master URL carrying a password, a local dir list over the bound and a
    number where Spark writes text planted in its environment update."""
    lines = YARN_LOG.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith(ENVIRONMENT_UPDATE))
    event = json.loads(lines[at])
    event["Spark Properties"].update(SECRETS, **{
        "spark.master": "spark://admin:SECRET-URL@master:7077",
        "spark.local.dir": ",".join(f"/data{n}/spark-local" for n in range(100)),     # 1789 characters
        "spark.shuffle.compress": 0})
    event["Hadoop Properties"]["fs.azure.account.key.x.blob.core.windows.net"] = "SECRET-AZURE"
    event["System Properties"]["javax.net.ssl.trustStorePassword"] = "SECRET-SYSTEM"
    lines[at] = json.dumps(event)
    folder = tmp_path / "raw" / "vm" / "eventlog" / "terasort-spark" / "eventlogs"
    folder.mkdir(parents=True)
    (folder / YARN_LOG.name).write_text("\n".join(lines) + "\n")
    return folder / YARN_LOG.name


def test_only_allowed_names_are_kept_and_no_secret_reaches_a_table(planted):
    tables, note = spark_tables([planted], planted.parents[4])
    text = "\n".join(frame.astype(str).to_csv() for frame in tables.values())
    assert "SECRET" not in text and "hunter2" not in text
    said = dict(zip(tables["spark_properties"]["name"], tables["spark_properties"]["value"]))
    assert said["spark.master"] == "spark"
    # over the bound and not text: left out whole (a cut list of dirs would read as the whole list), and said so
    assert "spark.local.dir" not in said and "spark.shuffle.compress" not in said
    assert (tables["spark_properties"]["value"].str.len() <= MAX_VALUE_CHARS).all()
    assert "2 allowed Spark or Hadoop property value(s) left out" in note
