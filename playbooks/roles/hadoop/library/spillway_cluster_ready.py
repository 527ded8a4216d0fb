#!/usr/bin/python
"""Is the cluster serving? Every check of tasks/health.yml in one module run per host, without waiting.

The bench checks health before every workload (issue 19: each Ansible task is a module start, 0.2-0.7 s on a loaded
2-core host, and health.yml has a dozen). On each host: the supervisor says every Hadoop daemon of the host runs.
On the host given `http` (the controller): the NameNode's JMX says HDFS is out of safe mode with every DataNode live,
the ResourceManager lists every NodeManager RUNNING, the JobHistoryServer answers, and a WebHDFS write then read-back
returns the text written. It never fails: `ready` says whether all held, `problems` what did not. tasks/ready.yml
runs the full health.yml when any host is not ready, which waits where waiting helps and names the daemon, its log
and the fix.
"""
import json
import subprocess
import time
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: spillway_cluster_ready
short_description: One-shot readiness check of a Spillway Hadoop cluster (the fast path of the health check)
options:
  supervisor: {type: path, required: true, description: "the host's spillway-daemon"}
  daemons: {type: list, elements: str, default: [], description: "the Hadoop daemons of this host"}
  http:
    type: dict
    description: >-
      given on one host only: namenode_jmx, resourcemanager_nodes, historyserver_info (URLs), workers (how many),
      probe_url (WebHDFS URL of the probe file, user.name included)
"""
TIMEOUT_S = 10


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get_json(url):
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
        return json.load(answer)


def daemon_problems(supervisor, daemons):
    running = set()
    for name in daemons:
        proc = subprocess.run([supervisor, "status", name], capture_output=True, text=True)
        running.update(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("running "))
    down = [name for name in daemons if name not in running]
    return [f"not running: {', '.join(down)}"] if down else []


def hdfs_probe(url):
    """Write a text through the NameNode (it redirects the upload to a DataNode), read it back."""
    text = f"spillway health probe {time.time():.6f}".encode()
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(urllib.request.Request(f"{url}&op=CREATE&overwrite=true", method="PUT"), timeout=TIMEOUT_S)
        return "WebHDFS CREATE was not redirected to a DataNode"
    except urllib.error.HTTPError as redirect:
        if redirect.code != 307:
            return f"WebHDFS CREATE: HTTP {redirect.code}"
        location = redirect.headers["Location"]
    upload = urllib.request.Request(location, data=text, method="PUT",
                                    headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(upload, timeout=TIMEOUT_S) as answer:
        if answer.status != 201:
            return f"WebHDFS write: HTTP {answer.status}"
    with urllib.request.urlopen(f"{url}&op=OPEN", timeout=TIMEOUT_S) as answer:
        read = answer.read()
    return None if read == text else f"WebHDFS read back {read[:200]!r}, expected {text!r}"


def cluster_problems(http):
    problems = []
    workers = int(http["workers"])
    checks = {
        "NameNode": lambda: get_json(http["namenode_jmx"])["beans"][0],
        "ResourceManager": lambda: get_json(http["resourcemanager_nodes"]),
        "JobHistoryServer": lambda: get_json(http["historyserver_info"]),
        "WebHDFS probe": lambda: hdfs_probe(http["probe_url"]),
    }
    answers = {}
    for name, check in checks.items():
        try:
            answers[name] = check()
        except (OSError, ValueError, KeyError, IndexError) as err:
            problems.append(f"{name}: {err}")
    state = answers.get("NameNode")
    if state is not None and (state.get("FSState") != "Operational" or state.get("NumLiveDataNodes") != workers):
        problems.append(f"HDFS {state.get('FSState')}, {state.get('NumLiveDataNodes')} live DataNodes of {workers}")
    nodes = answers.get("ResourceManager")
    if nodes is not None and len(((nodes.get("nodes") or {}).get("node")) or []) != workers:
        problems.append(f"{len(((nodes.get('nodes') or {}).get('node')) or [])} RUNNING NodeManagers of {workers}")
    if answers.get("WebHDFS probe"):
        problems.append(answers["WebHDFS probe"])
    return problems


def main():
    module = AnsibleModule(argument_spec={
        "supervisor": {"type": "path", "required": True},
        "daemons": {"type": "list", "elements": "str", "default": []},
        "http": {"type": "dict"},
    }, supports_check_mode=True)
    problems = daemon_problems(module.params["supervisor"], module.params["daemons"])
    if module.params["http"]:
        problems += cluster_problems(module.params["http"])
    module.exit_json(changed=False, ready=not problems, problems=problems)


if __name__ == "__main__":
    main()
