"""Builds the Grafana dashboards from `dashboards.queries` with the grafana-foundation-sdk (Grafana 11.6 models).

The output is deterministic (no ids from counters shared between runs, sorted keys) so a test can regenerate
the dashboards and compare them with the committed files in dashboards/generated/.
"""
import json
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard as board
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (DashboardCursorSync, DataSourceRef, VariableOption,
                                                     VariableRefresh, VariableSort)

from dashboards import queries

GENERATED_DIR = Path(__file__).resolve().parent / "generated"
GRAFANA_VERSION = "11.6"
# The datasource the provisioning file of the grafana role declares (uid fixed there so dashboards find it).
DATASOURCE = DataSourceRef(type_val="prometheus", uid="spillway-prometheus")
# Options of Grafana's Prometheus annotation editor. The core dashboard schema leaves a datasource's annotation
# fields to the datasource plugin, so the SDK has no setters for them: the generator adds them to the JSON.
ANNOTATION_PLUGIN_KEYS = ("useValueForTime", "titleFormat", "textFormat", "tagKeys", "step")
PANEL_WIDTH, PANEL_HEIGHT = 12, 8

DASHBOARDS = {
    queries.IO: {"uid": "spillway-io", "title": "Spillway: live I/O",
                 "description": "Per node and device: throughput, IOPS, request size, await, queue depth, "
                                "utilization (backends from spillway_disk_info); CPU iowait and network."},
    queries.CLUSTER: {"uid": "spillway-cluster", "title": "Spillway: cluster",
                      "description": "HDFS and YARN (JMX exporter) and Spark executors (PrometheusServlet)."},
}


def _variable(variable):
    match_all = VariableOption(selected=True, text="All", value="$__all")
    return (board.QueryVariable(variable.name).label(variable.label).datasource(DATASOURCE)
            .query({"query": f"label_values({variable.metric}, {variable.name})", "refId": variable.name})
            .multi(True).include_all(True).all_value(".*").current(match_all)
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC))


def _panel(query, panel_id):
    return (timeseries.Panel().id(panel_id).title(query.title).description(f"query id: {query.id}")
            .datasource(DATASOURCE).unit(query.unit).height(PANEL_HEIGHT).span(PANEL_WIDTH)
            .fill_opacity(10).show_points(common.VisibilityMode.NEVER)
            .with_target(prometheus.Dataquery().expr(query.expr).legend_format(query.legend).range()
                         .ref_id("A").datasource(DATASOURCE)))


def _annotation(annotation):
    return (board.AnnotationQuery().name(annotation.name).datasource(DATASOURCE).enable(True)
            .icon_color(annotation.color).expr(annotation.expr))


def _annotation_plugin_fields(annotation):
    return {"useValueForTime": True, "titleFormat": annotation.title, "textFormat": annotation.text,
            "tagKeys": ",".join(annotation.tags), "step": "10s"}


def build(kind):
    """The dashboard's JSON document (a dict) for `queries.IO` or `queries.CLUSTER`."""
    meta = DASHBOARDS[kind]
    builder = (board.Dashboard(meta["title"]).uid(meta["uid"]).description(meta["description"])
               .tags(["spillway"]).editable().tooltip(DashboardCursorSync.CROSSHAIR)
               .time("now-30m", "now").refresh("10s").timezone("browser")
               .timepicker(board.TimePicker().refresh_intervals(["5s", "10s", "30s", "1m", "5m"])))
    for variable in queries.TEMPLATE_VARIABLES:
        builder = builder.with_variable(_variable(variable))
    for annotation in queries.ANNOTATIONS:
        builder = builder.annotation(_annotation(annotation))
    panel_id = 0
    rows = {}
    for query in queries.for_dashboard(kind):
        rows.setdefault(query.row, []).append(query)
    for title, members in rows.items():
        panel_id += 1
        builder = builder.with_row(board.Row(title).id(panel_id))
        for query in members:
            panel_id += 1
            builder = builder.with_panel(_panel(query, panel_id))
    document = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    for entry, annotation in zip(document["annotations"]["list"], queries.ANNOTATIONS):
        entry.update(_annotation_plugin_fields(annotation))
    return document


def serialize(document):
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def file_name(kind):
    return f"{DASHBOARDS[kind]['uid']}.json"


def write_all(out_dir=GENERATED_DIR):
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in DASHBOARDS:
        path = out_dir / file_name(kind)
        path.write_text(serialize(build(kind)))
        written.append(path)
    return written
