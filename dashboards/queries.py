"""Every PromQL query of the dashboards, defined once.

The Grafana generator (`python -m dashboards`), the live query test and the bench's Prometheus archive all read
these definitions, so a panel and the archived series of a run always show the same numbers.

Expressions use Grafana's template variables `$cluster`, `$node`, `$device`, `$backend` and `$profile` as
regex matchers (`=~`); `render()` substitutes them for use outside Grafana. Metric sources:
- node_exporter 1.5 (job `node`), run with loop devices kept (monitoring contract);
- `spillway_disk_info` (textfile collector): which backend and emulation profile a device of a node is;
- Hadoop daemons through the JMX exporter (job `hadoop`, label `daemon`): matched by name case-insensitively
  because the exporter's default naming keeps the MBean's case while `lowercaseOutputName` folds it, and counters
  gain `_total` only when a rule types them;
- Spark's PrometheusServlet executor metrics (`metrics_executor_*`, labels application_id/executor_id);
- the bench's markers on the Pushgateway (`spillway_workload_*`, `spillway_stage_*`).
"""
import re
from dataclasses import dataclass

# Counters are turned into rates over this window: 15 scrapes at the contract's 2 s interval, short enough to
# follow a workload's stages.
RATE_WINDOW = "30s"
VARIABLES = ("cluster", "node", "device", "backend", "profile")


@dataclass(frozen=True)
class Query:
    id: str
    title: str
    expr: str
    unit: str          # a Grafana unit id (Bps, iops, bytes, s, percentunit, short, ...)
    legend: str
    dashboard: str     # "io" or "cluster"
    row: str


@dataclass(frozen=True)
class Annotation:
    id: str
    name: str
    expr: str          # value is the event time in ms (Grafana's useValueForTime)
    title: str
    text: str
    tags: tuple[str, ...]
    color: str


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    metric: str        # label_values(<metric>, <name>) in Grafana


def render(expr, **values):
    """The expression with its template variables replaced; unset variables match everything."""
    unknown = set(values) - set(VARIABLES)
    if unknown:
        raise ValueError(f"unknown template variables {sorted(unknown)}; known: {list(VARIABLES)}")
    # Longest name first is not needed (no name is a prefix of another), but a word boundary is: `$node` must
    # not eat the start of a longer identifier.
    return re.sub(r"\$(" + "|".join(VARIABLES) + r")\b",
                  lambda m: str(values.get(m.group(1), ".*")), expr)


def _node(selector=""):
    return f'job="node", cluster=~"$cluster", node=~"$node"{selector}'


_DISK_INFO = 'spillway_disk_info{cluster=~"$cluster", node=~"$node", backend=~"$backend", profile=~"$profile"}'


def _disk_rate(counter):
    """Per-second rate of a diskstats counter, labelled with the device's backend and profile."""
    selector = _node(', device=~"$device"')
    return (f'rate({counter}{{{selector}}}[{RATE_WINDOW}])'
            f' * on(cluster, node, device) group_left(backend, profile) {_DISK_INFO}')


def _ratio(numerator, denominator):
    # An idle device gives 0/0 = NaN: a gap in the panel, not a made-up zero.
    return f"({_disk_rate(numerator)})\n/\n({_disk_rate(denominator)})"


def _hadoop(name, daemon, selector=""):
    return f'{{__name__=~"(?i){name}(_total)?", job="hadoop", daemon="{daemon}", cluster=~"$cluster"{selector}}}'


def _executor(query_id, title, metric, unit):
    """A Spark executor metric per application and executor; counters (`*_total`) as per-second rates."""
    series = f'{metric}{{cluster=~"$cluster"}}'
    if metric.endswith("_total"):
        series = f"rate({series}[{RATE_WINDOW}])"
    return Query(query_id, title, f"sum by (application_name, executor_id) ({series})", unit,
                 "{{application_name}} executor {{executor_id}}", CLUSTER, "Spark executors")


_IOWAIT, _IDLE = ', mode="iowait"', ', mode="idle"'
DISK_LEGEND = "{{node}} {{backend}} ({{device}})"
IO, CLUSTER = "io", "cluster"

def _per_request(query_id, title, total, requests, unit):
    """A device's `total` (bytes, seconds) per completed request, in the Requests row."""
    return Query(query_id, title, _ratio(total, requests), unit, DISK_LEGEND, IO, "Requests")


def _network(direction):
    """Bytes per second a node's network interfaces move in `direction` (receive, transmit)."""
    return Query(f"network_{direction}_bytes", f"Network {direction}",
                 f'rate(node_network_{direction}_bytes_total{{{_node()}}}[{RATE_WINDOW}])',
                 "Bps", "{{node}} {{device}}", IO, "Node")


def _datanode_bytes(direction, participle):
    """Bytes per second the DataNodes read or wrote (their JMX counter `BytesRead`, `BytesWritten`)."""
    counter = _hadoop(f"hadoop_datanode_bytes{participle}", "datanode")
    return Query(f"hdfs_datanode_{direction}_bytes", f"DataNode bytes {participle}",
                 f"sum by (cluster, node) (rate({counter}[{RATE_WINDOW}]))", "Bps", "{{node}}", CLUSTER, "HDFS")


QUERIES = (
    Query("disk_read_bytes", "Read throughput", _disk_rate("node_disk_read_bytes_total"),
          "Bps", DISK_LEGEND, IO, "Devices"),
    Query("disk_write_bytes", "Write throughput", _disk_rate("node_disk_written_bytes_total"),
          "Bps", DISK_LEGEND, IO, "Devices"),
    Query("disk_read_iops", "Read IOPS", _disk_rate("node_disk_reads_completed_total"),
          "iops", DISK_LEGEND, IO, "Devices"),
    Query("disk_write_iops", "Write IOPS", _disk_rate("node_disk_writes_completed_total"),
          "iops", DISK_LEGEND, IO, "Devices"),
    _per_request("disk_read_request_size", "Average read request size (bytes / requests)",
                 "node_disk_read_bytes_total", "node_disk_reads_completed_total", "bytes"),
    _per_request("disk_write_request_size", "Average write request size (bytes / requests)",
                 "node_disk_written_bytes_total", "node_disk_writes_completed_total", "bytes"),
    _per_request("disk_read_await", "Read await (time per completed read)",
                 "node_disk_read_time_seconds_total", "node_disk_reads_completed_total", "s"),
    _per_request("disk_write_await", "Write await (time per completed write)",
                 "node_disk_write_time_seconds_total", "node_disk_writes_completed_total", "s"),
    # iostat's aqu-sz: the weighted I/O time grows by the number of requests in flight every second.
    Query("disk_queue_depth", "Average queue depth", _disk_rate("node_disk_io_time_weighted_seconds_total"),
          "short", DISK_LEGEND, IO, "Requests"),
    Query("disk_utilization", "Utilization (time with requests in flight)",
          _disk_rate("node_disk_io_time_seconds_total"), "percentunit", DISK_LEGEND, IO, "Requests"),
    Query("cpu_iowait", "CPU iowait (share of all cores)",
          f'avg by (cluster, node) (rate(node_cpu_seconds_total{{{_node(_IOWAIT)}}}[{RATE_WINDOW}]))',
          "percentunit", "{{node}}", IO, "Node"),
    Query("cpu_busy", "CPU busy (share of all cores)",
          f'1 - avg by (cluster, node) (rate(node_cpu_seconds_total{{{_node(_IDLE)}}}[{RATE_WINDOW}]))',
          "percentunit", "{{node}}", IO, "Node"),
    _network("receive"),
    _network("transmit"),

    Query("hdfs_capacity_used", "HDFS capacity used",
          _hadoop("hadoop_namenode_capacityused", "namenode", ', name=~"(?i)FSNamesystem"'),
          "bytes", "{{cluster}}", CLUSTER, "HDFS"),
    Query("hdfs_live_datanodes", "Live DataNodes",
          _hadoop("hadoop_namenode_numlivedatanodes", "namenode", ', name=~"(?i)FSNamesystemState"'),
          "short", "{{cluster}}", CLUSTER, "HDFS"),
    _datanode_bytes("write", "written"),
    _datanode_bytes("read", "read"),
    Query("yarn_active_nodemanagers", "Active NodeManagers",
          _hadoop("hadoop_resourcemanager_numactivenms", "resourcemanager", ', name=~"(?i)ClusterMetrics"'),
          "short", "{{cluster}}", CLUSTER, "YARN"),
    # The root queue's QueueMetrics (no q1 label) sum up every leaf queue.
    Query("yarn_apps_running", "Running applications",
          _hadoop("hadoop_resourcemanager_appsrunning", "resourcemanager",
                  ', name=~"(?i)QueueMetrics", q0="root", q1=""'),
          "short", "{{cluster}}", CLUSTER, "YARN"),
    Query("yarn_allocated_mb", "Allocated memory",
          _hadoop("hadoop_resourcemanager_allocatedmb", "resourcemanager",
                  ', name=~"(?i)QueueMetrics", q0="root", q1=""'),
          "decmbytes", "{{cluster}}", CLUSTER, "YARN"),
    Query("yarn_containers_running", "Running containers per NodeManager",
          _hadoop("hadoop_nodemanager_containersrunning", "nodemanager", ', node=~"$node"'),
          "short", "{{node}}", CLUSTER, "YARN"),
    _executor("spark_executor_active_tasks", "Active tasks per executor", "metrics_executor_activeTasks", "short"),
    _executor("spark_executor_shuffle_read_bytes", "Shuffle read",
              "metrics_executor_totalShuffleRead_bytes_total", "Bps"),
    _executor("spark_executor_shuffle_write_bytes", "Shuffle write",
              "metrics_executor_totalShuffleWrite_bytes_total", "Bps"),
    _executor("spark_executor_input_bytes", "Input read", "metrics_executor_totalInputBytes_bytes_total", "Bps"),
    _executor("spark_executor_memory_used", "Storage memory used", "metrics_executor_memoryUsed_bytes", "bytes"),
    _executor("spark_executor_gc_time", "GC time (share of wall time)",
              "metrics_executor_totalGCTime_seconds_total", "percentunit"),
)

# Markers pushed by the bench runner and the Spark stage listener (monitoring contract, "Markers").
ANNOTATIONS = (
    Annotation("workload_start", "Workload start",
               'spillway_workload_start_timestamp_seconds{cluster=~"$cluster"} * 1000',
               "{{workload_id}} started", "run {{run_id}}", ("workload", "workload_id"), "green"),
    Annotation("workload_end", "Workload end",
               'spillway_workload_end_timestamp_seconds{cluster=~"$cluster"} * 1000',
               "{{workload_id}} ended: {{status}}", "run {{run_id}}", ("workload", "workload_id", "status"), "red"),
    Annotation("stage_start", "Spark stage start",
               'spillway_stage_start_timestamp_seconds{cluster=~"$cluster"} * 1000',
               "stage {{stage_id}} {{stage_name}}", "{{workload_id}} {{app_id}} attempt {{attempt}}",
               ("workload_id", "stage_id"), "blue"),
    Annotation("stage_end", "Spark stage end",
               'spillway_stage_end_timestamp_seconds{cluster=~"$cluster"} * 1000',
               "stage {{stage_id}} {{stage_name}}: {{status}}", "{{workload_id}} {{app_id}} attempt {{attempt}}",
               ("workload_id", "stage_id", "status"), "purple"),
)

# Values offered by the dashboards' variables: the devices the harness attributed to backends.
TEMPLATE_VARIABLES = (
    Variable("cluster", "Cluster", "spillway_disk_info"),
    Variable("node", "Node", 'spillway_disk_info{cluster=~"$cluster"}'),
    Variable("backend", "Backend", 'spillway_disk_info{cluster=~"$cluster", node=~"$node"}'),
    Variable("profile", "Backend profile", 'spillway_disk_info{cluster=~"$cluster", node=~"$node", backend=~"$backend"}'),
    Variable("device", "Device",
             'spillway_disk_info{cluster=~"$cluster", node=~"$node", backend=~"$backend", profile=~"$profile"}'),
)


def by_id():
    return {q.id: q for q in QUERIES}


def for_dashboard(dashboard):
    return [q for q in QUERIES if q.dashboard == dashboard]
