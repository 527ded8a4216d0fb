"""Which ports a host's daemons will bind, each with the inventory setting that moves it.

The values come from role common's port map (defaults/main/ports.json, the file spillway/cluster_check.py reads too):
hadoop_ports, hadoop_port_daemons (the daemon behind each port name's prefix) and the monitoring settings. The
daemons are placed by group (hadoop_daemons: name -> group); monitoring puts node_exporter everywhere,
Prometheus, the Pushgateway and Grafana on the controller and a JMX exporter in every Hadoop daemon.
"""


def spillway_host_ports(hadoop_ports, hadoop_port_daemons, hadoop_daemons, monitoring, group_names, is_controller):
    """{port: setting} for one host; a port of an unknown daemon prefix counts on every host."""
    daemon_groups = {daemon["name"]: daemon["group"] for daemon in hadoop_daemons}
    runs_here = {name for name, group in daemon_groups.items() if group in group_names}
    ports = {}
    for name, port in hadoop_ports.items():
        daemon = hadoop_port_daemons.get(name.split("_")[0])
        if daemon is None or daemon in runs_here:
            ports[int(port)] = f"hadoop_ports.{name}"
    if monitoring.get("enabled"):
        ports[int(monitoring["node_exporter_port"])] = "spillway_monitoring.node_exporter_port"
        for daemon, port in monitoring["jmx_exporter_ports"].items():
            if daemon in runs_here:
                ports[int(port)] = f"spillway_monitoring.jmx_exporter_ports.{daemon}"
        if is_controller:
            for name in ("prometheus_port", "pushgateway_port"):
                ports[int(monitoring[name])] = f"spillway_monitoring.{name}"
            if monitoring["grafana"]["enabled"]:
                ports[int(monitoring["grafana"]["port"])] = "spillway_monitoring.grafana.port"
    return ports


class FilterModule:
    def filters(self):
        return {"spillway_host_ports": spillway_host_ports}
