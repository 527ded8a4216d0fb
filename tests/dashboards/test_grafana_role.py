"""Role grafana on this machine, where Grafana cannot be installed: ansible-lint, check mode of
playbooks/grafana.yml with a vault-encrypted password (only the install step is skipped), the refusal without a
password, and the provisioning files rendered by Ansible itself and parsed."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dashboards import generate
from spillway import REPO

BIN = Path(sys.executable).parent
ROLE = REPO / "playbooks/roles/grafana"
VAULT_PASSWORD = "spillway-test-vault"
ADMIN_PASSWORD = "not-a-default-0f9a"


def run(*args, cwd=REPO):
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def inventory(tmp_path):
    """A one-host inventory (this machine as controller) with Grafana enabled; the password in a vault file."""
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "children": {"controller": {"hosts": {"localhost": None}}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}))
    (tmp_path / "group_vars/all.yml").write_text(yaml.safe_dump({
        "spillway_cluster": "grafanatest", "spillway_monitoring": {"grafana": {"enabled": True, "port": 3001}}}))
    password_file = tmp_path / "vault-password"
    password_file.write_text(VAULT_PASSWORD + "\n")
    return tmp_path, password_file


def add_vault_password(inventory_dir, password_file):
    secret = inventory_dir / "group_vars/controller.yml"
    secret.write_text(f"grafana_admin_password: {ADMIN_PASSWORD}\n")
    proc = run(BIN / "ansible-vault", "encrypt", "--vault-password-file", password_file, secret)
    assert proc.returncode == 0, proc.stderr
    assert secret.read_text().startswith("$ANSIBLE_VAULT;") and ADMIN_PASSWORD not in secret.read_text()


def check_mode(inventory_dir, *extra):
    return run(BIN / "ansible-playbook", "-i", inventory_dir, "playbooks/grafana.yml", "--check", *extra)


def test_grafana_role_passes_ansible_lint():
    proc = run(BIN / "ansible-lint", "--nocolor", "--offline", "playbooks/grafana.yml", "playbooks/roles/grafana")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr


def test_check_mode_with_a_vault_password_checks_everything_but_the_download(inventory):
    inventory_dir, password_file = inventory
    add_vault_password(inventory_dir, password_file)
    proc = check_mode(inventory_dir, "--vault-password-file", password_file, "--diff")
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in out
    assert "apt repository is not configured here" in out
    for task in ("Grafana configuration (admin password from Vault)", "Prometheus datasource and dashboard provider",
                 "Generated dashboards (python -m dashboards)"):
        assert f"TASK [grafana : {task}]" in out
    # the dashboards it would copy are the committed ones; the password never reaches the log
    assert "changed: [localhost] => (item=spillway-io.json)" in out
    assert ADMIN_PASSWORD not in out
    assert not Path("/var/lib/spillway/grafanatest").exists()


def test_refuses_to_run_without_an_admin_password(inventory):
    inventory_dir, _ = inventory
    proc = check_mode(inventory_dir)
    assert proc.returncode != 0
    assert "grafana_admin_password is not set" in proc.stdout
    assert "Ansible Vault" in proc.stdout
    assert "TASK [grafana : Grafana configuration" not in proc.stdout


def test_disabled_grafana_does_nothing(inventory):
    inventory_dir, _ = inventory
    (inventory_dir / "group_vars/all.yml").write_text(yaml.safe_dump({"spillway_cluster": "grafanatest"}))
    proc = check_mode(inventory_dir)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Refuse to run without" not in proc.stdout


def render(template, dest, variables):
    """A template of the role rendered by Ansible's template module, with the role's defaults."""
    extra = dest.parent / f"{dest.name}.vars.json"
    extra.write_text(json.dumps(variables))
    proc = run(BIN / "ansible", "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.template",
               "-a", f"src={ROLE / 'templates' / template} dest={dest}",
               "-e", f"@{ROLE / 'defaults/main.yml'}", "-e", f"@{extra}", "-e", f"role_path={ROLE}", "-e", f"ansible_python_interpreter={sys.executable}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dest.read_text()


VARIABLES = {"spillway_cluster": "c1", "spillway_root": "/var/lib/spillway/c1", "spillway_bind_address": "10.0.0.5",
             "spillway_monitoring": {"prometheus_port": 19090, "grafana": {"enabled": True, "port": 3001}},
             "grafana_admin_password": ADMIN_PASSWORD}


def test_provisioning_files_point_grafana_at_the_cluster_prometheus_and_dashboards(tmp_path):
    datasource = yaml.safe_load(render("datasources/prometheus.yaml.j2", tmp_path / "prometheus.yaml", VARIABLES))
    [source] = datasource["datasources"]
    assert source["url"] == "http://10.0.0.5:19090"
    assert source["type"] == "prometheus"
    assert source["uid"] == generate.DATASOURCE.uid    # the uid every generated panel references
    assert source["jsonData"]["timeInterval"] == "2s"    # monitoring role's default scrape interval
    provider = yaml.safe_load(render("dashboards/spillway.yaml.j2", tmp_path / "spillway.yaml", VARIABLES))
    [files] = provider["providers"]
    assert files["type"] == "file" and files["options"]["path"] == "/var/lib/spillway/c1/grafana/dashboards"


def test_grafana_ini_binds_the_cluster_address_and_takes_the_vault_password(tmp_path):
    import configparser
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(render("grafana.ini.j2", tmp_path / "grafana.ini", VARIABLES))
    assert ini["server"]["http_addr"] == "10.0.0.5" and ini["server"]["http_port"] == "3001"
    assert ini["security"]["admin_password"] == f'"""{ADMIN_PASSWORD}"""'
    assert ini["auth.anonymous"]["enabled"] == "false" and ini["users"]["allow_sign_up"] == "false"


def test_grafana_needs_monitoring_on(inventory):
    inventory_dir, _ = inventory
    (inventory_dir / "group_vars/all.yml").write_text(yaml.safe_dump({
        "spillway_cluster": "grafanatest", "spillway_monitoring": {"enabled": False, "grafana": {"enabled": True}}}))
    proc = check_mode(inventory_dir)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Refuse to run without" not in proc.stdout


def play_names_and_tasks(playbook, inventory_dir):
    proc = run(BIN / "ansible-playbook", "-i", inventory_dir, playbook, "--list-tasks")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


def test_provision_runs_grafana_after_monitoring_and_teardown_stops_it(inventory):
    inventory_dir, _ = inventory
    provision = play_names_and_tasks("playbooks/provision.yml", inventory_dir)
    plays = [line.split("play #")[1].split(":", 1)[1].split("\tTAGS")[0].strip()
             for line in provision.splitlines() if "play #" in line]
    assert plays == ["Parallel file system servers", "Provision the cluster", "Grafana on the controller",
                     "Install the collectors", "Health check of the provisioned cluster",
                     "Record what the cluster was provisioned from"]
    teardown = play_names_and_tasks("playbooks/teardown.yml", inventory_dir)
    assert teardown.index("Stop the monitoring processes (role monitoring") < teardown.index(
        "Stop Grafana (role grafana, tasks stop)") < teardown.index("Remove the cluster's storage and state")


def role_tasks():
    """Every task of the role (its task files and handlers, blocks opened), with the file it is in."""
    found = []

    def walk(tasks, file):
        for task in tasks or []:
            found.append((file, task))
            for key in ("block", "rescue", "always"):
                walk(task.get(key), file)
    for path in sorted((ROLE / "tasks").glob("*.yml")) + [ROLE / "handlers/main.yml"]:
        walk(yaml.safe_load(path.read_text()), path.name)
    return found


# The modules that write a file or folder, whose destination is checked.
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file", "ansible.builtin.get_url",
           "ansible.builtin.lineinfile", "ansible.builtin.blockinfile")


def test_grafana_runs_as_its_packages_grafana_user_and_no_task_changes_that():
    """Grafana never runs in a test here (no internet for its apt repository): docs/safety.md's rule is shown on the
    role instead. The service is the package's own unit (grafana-server, whose User= is the package's `grafana`), and
    no task makes a unit, a drop-in, an account or a process of another user, or changes who runs it; what the role
    writes for Grafana is root's, readable by the package's group alone."""
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    assert (defaults["grafana_service"], defaults["grafana_group"]) == ("grafana-server", "grafana")
    tasks = role_tasks()
    assert len(tasks) > 10
    for file, task in tasks:
        module, arguments = next((key, value) for key, value in task.items() if key.startswith("ansible.builtin."))
        where = f"{file}: {task.get('name')}"
        assert not {"become_user", "become", "environment"} & set(task), where
        assert module not in ("ansible.builtin.user", "ansible.builtin.group", "ansible.builtin.command",
                              "ansible.builtin.shell") or arguments == {"cmd": "apt-cache policy grafana"}, where
        if module == "ansible.builtin.systemd_service":
            assert arguments["name"] == "{{ grafana_service }}" and "daemon_reload" not in arguments, where
        if module in WRITERS:
            destination = arguments.get("dest") or arguments.get("path")
            for written in task["loop"] if destination == "{{ item }}" else [destination]:
                assert "systemd" not in written and written.startswith("{{ grafana_"), where
        assert "User=" not in json.dumps(arguments), where
        if module == "ansible.builtin.template":
            assert (arguments["owner"], arguments["group"], arguments["mode"]) == ("root", "{{ grafana_group }}",
                                                                                   "0640"), where
