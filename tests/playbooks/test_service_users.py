"""Role common's users.yml (docs/safety.md "Least privilege", "Accounts"), with real Ansible on this machine: the
service users and their group are created as locked system accounts without a login shell and recorded as the
harness's; a user name that is not a plain account name (or is root) is refused, naming the fix, before any account
is created; an existing account that is not the harness's is refused, naming it, and left byte-identical; one an
earlier Spillway made before records is adopted. Each test has its own record (common_accounts_record), never the
machine's /etc/spillway/service-accounts.json."""
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
DECOY = f"{PREFIX}-decoy"
ACCOUNT_FILES = ("/etc/passwd", "/etc/shadow", "/etc/group")


def run_users_tasks(tmp_path, users, group=TEST_GROUP, record=None):
    playbook = tmp_path / "users.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  strategy: mitogen_linear  # as provision.yml runs these tasks
  tasks:
    - ansible.builtin.include_role:
        name: common
        tasks_from: users
""")
    extra = {"spillway_service_users": users, "spillway_service_group": group,
             "common_accounts_record": str(record or tmp_path / "service-accounts.json"),
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
    for name in [*TEST_USERS.values(), DECOY]:
        if account(name):
            subprocess.run(["userdel", name], check=True)
    for group in (TEST_GROUP, DECOY):
        subprocess.run(["groupdel", group], check=False, capture_output=True)


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
    record = json.loads((tmp_path / "service-accounts.json").read_text())
    assert record["accounts"] == {name: account(name).pw_uid for name in test_accounts.values()}
    assert record["groups"] == {TEST_GROUP: gid}
    again = run_users_tasks(tmp_path, test_accounts)
    assert again.returncode == 0 and "changed=0" in again.stdout


def entries_of(name):
    """The lines of `name` in the account files, to be compared byte for byte."""
    return [line for path in ACCOUNT_FILES for line in Path(path).read_text().splitlines()
            if line.startswith(name + ":")]


def test_an_existing_account_that_is_not_the_harnesss_is_refused_and_left_unchanged(tmp_path, test_accounts):
    # someone's account: a home, a login shell, a group of its own
    subprocess.run(["useradd", "--system", "--user-group", "--home-dir", str(tmp_path / "home"), "--shell", "/bin/sh",
                    DECOY], check=True)
    before = entries_of(DECOY)
    result = run_users_tasks(tmp_path, {**test_accounts, "workload": DECOY})
    assert result.returncode != 0
    assert f"spillway_service_users.workload: account '{DECOY}'" in result.stdout, result.stdout[-3000:]
    assert "name another account in spillway_service_users" in result.stdout
    assert entries_of(DECOY) == before
    assert not any(account(name) for name in TEST_USERS.values())


def test_accounts_an_earlier_spillway_made_are_adopted_and_recorded(tmp_path, test_accounts):
    subprocess.run(["groupadd", "--system", TEST_GROUP], check=True)
    for name in test_accounts.values():
        subprocess.run(["useradd", "--system", "--gid", TEST_GROUP, "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", name], check=True)
    before = {name: entries_of(name) for name in test_accounts.values()}
    result = run_users_tasks(tmp_path, test_accounts)
    assert result.returncode == 0, result.stdout[-3000:]
    assert {name: entries_of(name) for name in test_accounts.values()} == before
    record = json.loads((tmp_path / "service-accounts.json").read_text())
    assert sorted(record["accounts"]) == sorted(test_accounts.values())


def test_a_recorded_account_made_again_by_someone_else_is_refused(tmp_path, test_accounts):
    assert run_users_tasks(tmp_path, test_accounts).returncode == 0
    record_file = tmp_path / "service-accounts.json"
    record = json.loads(record_file.read_text())
    record["accounts"][test_accounts["hdfs"]] += 1   # the account of that name is no longer the recorded one
    record_file.write_text(json.dumps(record))
    result = run_users_tasks(tmp_path, test_accounts)
    assert result.returncode != 0 and f"account '{test_accounts['hdfs']}'" in result.stdout


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
