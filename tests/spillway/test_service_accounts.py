"""spillway/service_accounts.py: validation refuses the base system's accounts and groups as service users, naming
the field, the file and the fix, with no host touched; the host-side judgement adopts what an earlier Spillway made
and refuses every other existing account (its playbook tests: tests/playbooks/test_service_users.py)."""
import pwd
import sys
from pathlib import Path

import pytest
import yaml

from spillway import REPO, inventory, service_accounts
from spillway.inventory import InventoryError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "safety"))
from scratch_inventories import inventories  # noqa: E402,F401  (a fixture: the shipped inventories, copied)

HARNESS_USERS = {service: f"spillway-{service}" for service in service_accounts.SERVICES}


def set_vars(path, **values):
    data = yaml.safe_load(path.read_text()) if path.is_file() else {}
    data.update(values)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize("name", ["root", "daemon", "nobody", "www-data", "_apt", "systemd-network", "sshd"])
def test_a_base_system_account_as_a_service_user_is_refused_by_validation(inventories, name):
    vars_file = inventories / "local" / "group_vars" / "all.yml"
    set_vars(vars_file, spillway_service_users={**HARNESS_USERS, "hdfs": name})
    with pytest.raises(InventoryError) as err:
        inventory.load("local")
    message = str(err.value)
    assert f"{vars_file}: spillway_service_users.hdfs: '{name}' is an account of the base system" in message
    assert "leave spillway_service_users out" in message


def test_a_base_group_or_an_account_set_for_one_host_is_refused_naming_its_file(inventories):
    host_file = inventories / "local" / "host_vars" / "localhost.yml"
    host_file.parent.mkdir(exist_ok=True)
    set_vars(host_file, spillway_service_users={**HARNESS_USERS, "workload": "daemon"},
             spillway_service_group="sudo")
    with pytest.raises(InventoryError) as err:
        inventory.load("local")
    message = str(err.value)
    assert f"{host_file}: spillway_service_users.workload: 'daemon'" in message
    assert f"{host_file}: spillway_service_group: 'sudo' is a group of the base system" in message


def test_the_base_list_holds_debians_base_passwd_master_accounts():
    path = "/usr/share/base-passwd/passwd.master"
    try:
        names = {line.split(":")[0] for line in open(path) if line.strip()}
    except FileNotFoundError:
        pytest.skip(f"{path} absent (base-passwd not installed)")
    assert names <= service_accounts.BASE_ACCOUNTS, names - service_accounts.BASE_ACCOUNTS


def test_an_existing_account_that_is_not_the_harnesss_is_refused_naming_it(tmp_path):
    record = service_accounts.read_record(str(tmp_path / "none.json"))
    daemon = pwd.getpwnam("daemon")
    users = {service: f"spillway-absent-{service}" for service in service_accounts.SERVICES}
    refusals, adopted = service_accounts.judge({**users, "collect": "daemon"}, "spillway-absent-group", record)
    assert len(refusals) == 1 and "account 'daemon' (uid %d)" % daemon.pw_uid in refusals[0]
    assert "spillway_service_users.collect" in refusals[0] and "name another account" in refusals[0]
    assert "daemon" not in adopted["accounts"]


def test_a_record_that_is_a_link_proves_nothing(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"format": "spillway-accounts/1", "accounts": {"daemon": 1}, "groups": {}}')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert service_accounts.read_record(str(real))["accounts"] == {"daemon": 1}
    assert service_accounts.read_record(str(link)) == {"accounts": {}, "groups": {}}
