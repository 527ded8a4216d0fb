"""Who the local default cluster's processes are (docs/safety.md "Least privilege"), read from the role defaults the
playbooks use, and how a test runs a Hadoop client as one of them."""
import yaml

from spillway import REPO

COMMON_DEFAULTS = yaml.safe_load((REPO / "playbooks/roles/common/defaults/main/main.yml").read_text())
SERVICE_USERS = COMMON_DEFAULTS["spillway_service_users"]
SERVICE_GROUP = COMMON_DEFAULTS["spillway_service_group"]
DAEMON_USERS = {daemon["name"]: SERVICE_USERS[daemon["runs_as"]] for daemon in COMMON_DEFAULTS["hadoop_daemons"]}
HADOOP = "/var/lib/spillway/local/bin/hadoop"


def as_workload_user(argv):
    """argv run as the workloads' user, as tasks/workload-command.yml runs a workload's commands."""
    return ["setpriv", f"--reuid={SERVICE_USERS['workload']}", f"--regid={SERVICE_GROUP}", "--init-groups",
            "--no-new-privs", "--", *argv]
