import json


def test_eventlog_fixture_is_spark_json_lines(fixtures):
    for name in ("application_1795280718534_0006", "application_1795280718534_0006.inprogress"):
        lines = (fixtures / "eventlog" / name).read_text().splitlines()
        assert json.loads(lines[0])["Event"] == "SparkListenerLogStart"
    final = (fixtures / "eventlog" / "application_1795280718534_0006").read_text().splitlines()
    assert json.loads(final[-1])["Event"] == "SparkListenerApplicationEnd"
