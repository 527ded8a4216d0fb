"""Role collectors' fetch (playbooks/collectors.yml -e collectors_action=fetch): each host's outputs of a workload run
land in <run_dir>/raw/<host>/ and no archive is left on either side, for the controller itself (the local connection:
unpacked where its archive lies) and for a host reached another way (copied to the controller first).

Real Ansible on this machine. The second host stands for a remote one: like an emulated node it sets no
ansible_connection, so it goes by Ansible's default transport, here `ansible.builtin.local` (ANSIBLE_TRANSPORT; the
role takes only the literal `local` for the controller's own) where a real cluster's is SSH: it takes the remote path
(fetch module, unpack on the controller by delegation) while needing no SSH. In the delegated unpack
ansible_connection is the controller's, which once sent such a host's unpack to look for its archive on the controller
(the emu benches' raw folders came back empty). Each host has a cluster root of its own under the test's folder."""
import os
import subprocess
import sys
from pathlib import Path

import yaml

from spillway import PLAYBOOKS, REPO

RUN_ID = "20261127-000000-fetchtest"
WORKLOAD_ID = "terasort"
HOSTS = {"controller": {"ansible_connection": "local"}, "worker": {}}


def test_every_hosts_outputs_land_in_its_raw_folder_and_no_archive_is_left(tmp_path):
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    roots = {host: tmp_path / "roots" / host for host in HOSTS}
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {
        host: {**connection, "ansible_python_interpreter": sys.executable, "spillway_cluster": "fetchtest",
               "spillway_root": str(roots[host])} for host, connection in HOSTS.items()}}}))
    for host, root in roots.items():
        outputs = root / "runs" / RUN_ID / "iostat" / WORKLOAD_ID
        outputs.mkdir(parents=True)
        (outputs / "iostat.json").write_text(f'{{"host": "{host}"}}')
        (root / "runs" / RUN_ID / "iostat" / ".state").write_text("a dot file stays behind")
    run_dir = tmp_path / "results" / RUN_ID
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(PLAYBOOKS / "collectors.yml"), "-e", "collectors_action=fetch", "-e", f"run_id={RUN_ID}",
                           "-e", f"workload_id={WORKLOAD_ID}", "-e", f"run_dir={run_dir}"],
                          cwd=REPO, env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_TRANSPORT": "ansible.builtin.local"}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for host in HOSTS:
        fetched = run_dir / "raw" / host / "iostat" / WORKLOAD_ID / "iostat.json"
        assert fetched.read_text() == f'{{"host": "{host}"}}', host
        assert not (run_dir / "raw" / host / "iostat" / ".state").exists()
        assert list((roots[host] / "runs").glob(".fetch-*")) == [], host          # the host's archive
    assert list((run_dir / "raw").glob(".fetch-*")) == []                      # the controller's copies
    # the controller's own archive was never copied: it was unpacked where it lay
    assert "skipping: [controller]" in proc.stdout.split("Copy the archive to the controller")[1].split("TASK")[0]
