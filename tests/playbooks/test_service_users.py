"""Role common's users.yml (docs/safety.md "Least privilege"), with real Ansible on this machine: the service users
and their group are created as locked system accounts without a login shell, and a user name that is not a plain
account name (or is root) is refused, naming the fix, before any account is created."""
import grp
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from spillway import PLAYBOOKS, REPO

# /etc/passwd is the machine's: names of this process alone, so that a test on another xdist worker (or in another
# pytest session) never sees, makes or removes these accounts; the tests of one process run one at a time.
PREFIX = f"spillway-t{os.getpid()}"
TEST_USERS = {service: f"{PREFIX}-{service}" for service in ("hdfs", "yarn", "mapred", "workload", "collect")}
TEST_GROUP = f"{PREFIX}-hadoop"


def run_users_tasks(tmp_path, users, group=TEST_GROUP):
    playbook = tmp_path / "users.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: common
        tasks_from: users
""")
    extra = {"spillway_service_users": users, "spillway_service_group": group,
             "ansible_python_interpreter": sys.executable}
    env = {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"),
           "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", json.dumps(extra), str(playbook)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def account(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


@pytest.fixture
def test_accounts():
    yield TEST_USERS
    for name in TEST_USERS.values():
        if account(name):
            subprocess.run(["userdel", name], check=True)
    subprocess.run(["groupdel", TEST_GROUP], check=False, capture_output=True)


def test_the_service_users_are_locked_system_accounts_in_the_service_group(tmp_path, test_accounts):
    result = run_users_tasks(tmp_path, test_accounts)
    assert result.returncode == 0, result.stdout[-3000:]
    gid = grp.getgrnam(TEST_GROUP).gr_gid
    for name in test_accounts.values():
        entry = account(name)
        assert entry.pw_gid == gid and entry.pw_shell == "/usr/sbin/nologin" and entry.pw_uid != 0
        assert entry.pw_uid < 1000   # a system account
        shadow = next(line for line in Path("/etc/shadow").read_text().splitlines() if line.startswith(name + ":"))
        assert shadow.split(":")[1] == "!"   # no password login
    again = run_users_tasks(tmp_path, test_accounts)
    assert again.returncode == 0 and "changed=0" in again.stdout


@pytest.mark.parametrize("mistake", ["root", "not-a-name", "missing-service", "root-group"])
def test_bad_service_users_are_refused_before_any_account_is_made(tmp_path, test_accounts, mistake):
    pwned = tmp_path / "pwned"
    users, group = {
        "root": ({**TEST_USERS, "hdfs": "root"}, TEST_GROUP),
        "not-a-name": ({**TEST_USERS, "yarn": f"yarn; touch {pwned}"}, TEST_GROUP),
        "missing-service": ({k: v for k, v in TEST_USERS.items() if k != "mapred"}, TEST_GROUP),
        "root-group": (TEST_USERS, "root"),
    }[mistake]
    result = run_users_tasks(tmp_path, users, group)
    assert result.returncode != 0
    # the role's own check names the fix; a missing service is caught first by the entry point's argument spec
    assert ("Fix it in the inventory" in result.stdout
            or "missing required arguments: mapred found in spillway_service_users" in result.stdout), result.stdout[-2000:]
    assert not any(account(name) for name in TEST_USERS.values())
    assert not pwned.exists()
