"""No value becomes code (docs/safety.md): make variables, workload parameters, sweep values, inventory paths and a
resumed run's manifest are refused or passed as data. Each test proves the negative: the marker file an injected
command would create must not appear."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys

import jinja2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from spillway import REPO, inventory, workloads
from spillway.bench.plan import new_plan
from spillway.run_record import MANIFEST_MAX_BYTES

# What every planned run id must be: words of the sweep alphabet joined by -, nothing a shell or a path treats
# specially (docs/safety.md).
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), f"an injected command ran: {path} exists"


def make(*args):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("value", ["x/;touch {marker};:", "x $(touch {marker})", "x`touch {marker}`"])
def test_a_cluster_name_with_shell_text_is_refused_before_any_command(marker, value):
    result = make("-n", "help", f"CLUSTER={value.format(marker=marker)}")
    assert result.returncode != 0
    assert "is not a cluster name" in result.stderr or "may not hold" in result.stderr


@pytest.mark.parametrize("variable", ["SCALE", "PARAMS", "RUN", "CORES", "TO", "VERSIONS", "FIO", "MONITORING"])
def test_a_make_value_holding_a_dollar_is_refused(marker, variable):
    result = make("-n", "help", f"{variable}=$(shell touch {marker})")
    assert result.returncode != 0
    assert f"{variable}: a value given to make may not hold '$'" in result.stderr


def makefile_own_variables():
    """Every variable the Makefile defines for itself (PY, PLAY, HOLD, ...), read from its assignments, and the ones
    make itself would take from a command line (SHELL)."""
    text = (REPO / "Makefile").read_text()
    own = set(re.findall(r"^(?:override )?([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)", text, re.MULTILINE))
    user = set(re.search(r"^(?:override )?USER_VARIABLES := ((?:.*\\\n)*.*)$", text, re.MULTILINE).group(1).replace("\\", " ").split())
    # The two lists of the check are `override`: a command-line value of theirs is ignored, not refused (the test
    # below shows it cannot widen them).
    return sorted(own - user - {"USER_VARIABLES", "COMMAND_LINE_VARIABLES"}) + ["SHELL", "MAKESHELL", ".SHELLFLAGS"]


def test_the_makefile_own_variables_are_found():
    assert {"PY", "PLAY", "HOLD", "CHECK", "BENCH", "EMU", "VENV", "SHELL"} <= set(makefile_own_variables())


@pytest.mark.parametrize("variable", makefile_own_variables())
def test_none_of_the_makefile_own_variables_can_be_given_on_its_command_line(marker, variable):
    """`make bench PY='touch x'` would run the value as the bench's command: refused before any recipe runs."""
    result = make("bench", "DRY_RUN=1", f"{variable}=touch {marker}; sh -c 'touch {marker}'")
    assert result.returncode == 2
    assert f"{variable}: not a variable of this Makefile's command line" in result.stderr


@pytest.mark.parametrize("name", ["ANYNAME", "X", "spillway_root"])
def test_a_variable_the_makefile_does_not_document_is_refused(marker, name):
    """GNU make expands every command-line variable when it exports it to a recipe, whatever its name: `make bench
    ANYNAME='$(shell touch x)'` ran the command before any check."""
    result = make("bench", "DRY_RUN=1", f"{name}=$(shell touch {marker})")
    assert result.returncode == 2
    assert f"{name}: not a variable of this Makefile's command line" in result.stderr


def test_the_list_of_allowed_variables_cannot_be_widened_from_the_command_line(marker):
    result = make("bench", "DRY_RUN=1", "USER_VARIABLES=USER_VARIABLES COMMAND_LINE_VARIABLES PY",
                  "COMMAND_LINE_VARIABLES=", f"PY=sh -c 'touch {marker}'")
    assert result.returncode == 2
    assert "not a variable of this Makefile's command line" in result.stderr


@pytest.mark.parametrize("variable", ["PARAMS", "WORKLOADS", "CORES", "PLACEMENT", "BACKENDS", "SCALE", "VERSIONS"])
def test_a_quote_in_a_make_value_stays_inside_its_argument(marker, variable):
    result = make("bench", "DRY_RUN=1", f"{variable}=x' ; touch {marker} ; echo '")
    assert result.returncode != 0, result.stdout  # refused by the bench's validation, as one odd value


def test_report_and_compare_quote_their_run_ids(marker):
    for target in (["report", f"RUN=x'; touch {marker}; '"], ["compare", f"RUNS=a b'; touch {marker}; '"]):
        assert make(*target).returncode != 0


def resumable_copy(tmp_path, **changes):
    run = tmp_path / "results" / "20260101-000000-local"
    run.mkdir(parents=True)
    manifest = {"run_id": run.name, "status": "interrupted", "cluster": "local",
                "parameters": {"workloads": ["fio-sweep"], "scale": "tiny"}}
    for key, value in changes.items():
        if key in ("workloads", "scale"):
            manifest["parameters"][key] = value
        else:
            manifest[key] = value
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.mark.parametrize("changes", [
    {"cluster": "local --ports; touch {marker};"}, {"workloads": ["fio-sweep;touch {marker}"]},
    {"scale": "tiny $(touch {marker})"}, {"run_id": "x; touch {marker}"}, {"cluster": "../../etc"}])
def test_a_resumed_run_whose_manifest_holds_shell_text_is_refused_naming_the_field(marker, tmp_path, changes):
    run = resumable_copy(tmp_path, **{k: json.loads(json.dumps(v).replace("{marker}", str(marker)))
                                      for k, v in changes.items()})
    result = make("bench", "DRY_RUN=1", f"RESUME={run}")
    assert result.returncode != 0
    field = next(iter(changes)).replace("workloads", "parameters.workloads").replace("scale", "parameters.scale")
    assert f": {field}:" in result.stderr and "cannot be resumed" in result.stderr, result.stderr


@pytest.mark.parametrize("manifest", ["[]", "5", "{", '{"run_id": 1}', "[" * 100000])
def test_a_malformed_manifest_is_refused_for_resume_without_a_traceback(tmp_path, manifest):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(manifest)
    result = subprocess.run([sys.executable, "-m", "spillway.run_record", "resumable", str(run)], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot be resumed" in result.stderr


def test_gatk4_prepare_passes_values_to_python_as_arguments():
    """A heredoc that bash expands ( <<EOF ) pastes values into the program it feeds: every heredoc of the
    workloads' and collectors' scripts is quoted ( <<'EOF' ), so its text is the program as written."""
    scripts = [p for folder in ("workloads", "collectors") for p in (REPO / folder).rglob("*")
               if p.is_file() and p.read_bytes()[:2] == b"#!"]
    assert any(p.name == "gatk4" for p in scripts)
    unquoted = [f"{p.relative_to(REPO)}:{n}" for p in scripts for n, line in enumerate(p.read_text().splitlines(), 1)
                if re.search(r"<<-?\s*[A-Za-z_]", line)]
    assert unquoted == []


def test_the_reported_gatk4_injection_is_refused_as_a_path():
    exploit = 'hdfs://x","p":__import__("os").system("touch pwned"),"q":"'
    with pytest.raises(workloads.WorkloadError, match="'reads'.*is not a path"):
        workloads.load("gatk4").parameters("tiny", {"reads": exploit})


@pytest.mark.parametrize("params, message", [
    ("tpch.scale_factor=.nan", "not a finite number"), ("tpch.scale_factor=.inf", "not a finite number"),
    ("terasort.rows=[1000,1000]", "given twice"), ("terasort.rows=[]", "sweeps over nothing"),
    ("kmeans.seed=[../../..]", "not of type int"), ("gatk4.executor_memory='4g;id'", "does not match"),
    ("gatk4.reference=/data/../../etc/shadow", "is not a path"), ("tpch.queries=1;touch", "does not match")])
def test_values_that_would_misbehave_are_refused_naming_the_parameter(params, message):
    name = params.split(".")[0]
    with pytest.raises(workloads.WorkloadError, match=message):
        new_plan("local", [name], "tiny", 1, params=params)


def test_a_sweep_value_escaping_the_run_directory_is_refused():
    spec = {"name": "probe", "description": "", "framework": "", "scales": {"tiny": {"data": ""}},
            "steps": {"run": []}, "parameters": {"label": {"type": "str", "default": "", "description": ""}}}
    probe = workloads.Workload("probe", REPO, spec)
    for value in ("../../..", ".hidden", "a/b", "a b", "x" * 65):
        with pytest.raises(workloads.WorkloadError, match="cannot name a run"):
            list(probe.instances("tiny", {"label": [value, "ok"]}))


def test_an_unsafe_spillway_root_in_hosts_yml_is_refused_naming_the_host(tmp_path, monkeypatch):
    copy = tmp_path / "inventories"
    shutil.copytree(REPO / "inventories", copy)
    hosts = copy / "emu" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("spillway_root: /var/lib/spillway/emu-worker1",
                                               "spillway_root: '/var/lib/$(touch /tmp/x)'"))
    monkeypatch.setattr(inventory, "INVENTORIES", copy)
    with pytest.raises(inventory.InventoryError, match=r"worker1: spillway_root: .* is not a safe absolute path"):
        inventory.load("emu")


def test_role_common_refuses_an_unsafe_path_from_variables_validation_cannot_see(marker, tmp_path):
    play = tmp_path / "play.yml"
    play.write_text("- hosts: localhost\n  gather_facts: false\n  roles: [common]\n  tasks:\n"
                    "    - ansible.builtin.command: 'true'\n")
    result = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", "inventories/local", str(play),
                             "-e", json.dumps({"spillway_root": f"/var/lib/x;touch {marker}"})], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            env={"ANSIBLE_ROLES_PATH": str(REPO / "playbooks/roles"), "PATH": "/usr/bin:/bin"})
    assert result.returncode != 0 and "spillway_root of localhost is" in result.stdout, result.stdout[-2000:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["", "terasort.", "tpch.", "gatk4.", "kmeans.", "fio-sweep."]),
                          st.sampled_from(["rows", "engine", "scale_factor", "queries", "reads", "executor_memory",
                                           "seed", "k", "block_sizes", "patterns", "target"]),
                          st.text(max_size=30)), max_size=3))
def test_any_params_string_is_refused_or_plans_safe_distinct_run_ids(items):
    params = " ".join(f"{w}{n}={v}" for w, n, v in items)
    try:
        plan = new_plan("local", ["terasort", "tpch", "gatk4", "kmeans", "fio-sweep"], "tiny", 1, params=params)
    except workloads.WorkloadError:
        return
    ids = [i.id for i in plan.instances]
    assert len(ids) == len(set(ids))
    assert all(RUN_ID.fullmatch(i) for i in ids), ids
    for instance in plan.instances:
        for value in instance.params.values():
            assert not (isinstance(value, str) and any(ord(c) < 32 for c in value))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.integers(), st.floats()), max_size=4))
def test_any_sweep_is_refused_or_names_each_run_safely(values):
    spec = {"name": "probe", "description": "", "framework": "", "scales": {"tiny": {"data": ""}}, "steps": {"run": []},
            "parameters": {"v": {"type": "str", "default": "", "description": ""},
                           "n": {"type": "float", "default": 0, "description": ""}}}
    probe = workloads.Workload("probe", REPO, spec)
    key = "n" if all(isinstance(v, (int, float)) for v in values) else "v"
    try:
        ids = [i for i, _ in probe.instances("tiny", {key: values})]
    except workloads.WorkloadError:
        return
    assert len(ids) == len(set(ids)) == len(values)
    assert all(RUN_ID.fullmatch(i) and ".." not in i.split("-") for i in ids), ids


def test_a_dry_run_validates_and_touches_nothing(tmp_path):
    # results/ of its own (SPILLWAY_RESULTS, as the harness reads it): a bench of the live clusters may add a run to
    # the checkout's results/ meanwhile
    results = tmp_path / "results"
    (results / "20260101-000000-local").mkdir(parents=True)
    before = sorted(results.rglob("*"))
    result = subprocess.run([sys.executable, "-m", "spillway", "bench", "--dry-run", "--workloads", "terasort",
                             "--cores", "1,2"], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "SPILLWAY_RESULTS": str(results)})
    assert result.returncode == 0, result.stderr
    assert "dry run: nothing is touched" in result.stdout and "terasort-spark-p2" in result.stdout
    assert sorted(results.rglob("*")) == before
    refused = subprocess.run([sys.executable, "-m", "spillway", "bench", "--dry-run", "--params",
                              "tpch.scale_factor=.nan", "--workloads", "tpch"], cwd=REPO, capture_output=True, text=True)
    assert refused.returncode == 2 and "scale_factor" in refused.stderr


def test_role_hadoop_writes_configuration_text_as_data(marker, tmp_path):
    """Role hadoop writes its rendered files in one shell call fed on stdin (tasks/config.yml): a property value from
    an inventory (hadoop_*_extra_conf) holding shell text, and a destination with spaces and a `;`, are written as
    they are, never run. The task's own script and stdin template, rendered as Ansible would."""
    tasks = yaml.safe_load((REPO / "playbooks/roles/hadoop/tasks/config.yml").read_text())
    [task] = [t for t in tasks if t["name"] == "Render the Hadoop configuration and wrappers"]
    content = f"<value>$(touch {marker})`touch {marker}`; touch {marker}</value>\n"
    files = [{"dest": str(tmp_path / "core-site.xml"), "mode": "0644", "content": content},
             # run in tmp_path, where `touch pwned` would make the marker
             {"dest": str(tmp_path / f"odd; touch {marker.name} $(touch {marker.name})"), "mode": "0755",
              "content": "#!/bin/sh\n"}]
    env = jinja2.Environment(trim_blocks=True)   # Ansible's default for templates
    env.filters["b64encode"] = lambda text: base64.b64encode(text.encode()).decode()
    stdin = env.from_string(task["ansible.builtin.shell"]["stdin"]).render(hadoop_changed_files=files)
    done = subprocess.run(["bash", "-c", task["ansible.builtin.shell"]["cmd"]], input=stdin + "\n", text=True,
                          capture_output=True, timeout=30, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "core-site.xml").read_text() == content
    odd = tmp_path / f"odd; touch {marker.name} $(touch {marker.name})"
    assert odd.read_text() == "#!/bin/sh\n" and oct(odd.stat().st_mode & 0o777) == "0o755"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["core-site.xml", odd.name])


@pytest.mark.parametrize("size", [MANIFEST_MAX_BYTES + 1, 16 * 2**30])
def test_a_manifest_over_64_mib_is_refused_for_resume_unread(tmp_path, size):
    """A sparse manifest one byte over the cap, and one of 16 GiB, under an address-space limit of 512 MiB that
    reading either whole would exceed: refused for its size, naming the limit, not for what reading it did."""
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "manifest.json", "wb") as sparse:
        sparse.truncate(size)
    result = subprocess.run(["bash", "-c", f"ulimit -v {512 * 1024} && exec \"$@\"", "bash", sys.executable, "-m",
                             "spillway.run_record", "resumable", str(run)], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "(file): larger than 64 MiB; this run cannot be resumed" in result.stderr, result.stderr


def test_a_manifest_that_is_a_link_is_not_followed_for_resume(tmp_path):
    """The same reading as the size cap's (run_record.read_record): a manifest.json linked to a file elsewhere, even
    a valid manifest, is refused, the file it points to unread."""
    real = resumable_copy(tmp_path / "elsewhere")
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").symlink_to(real / "manifest.json")
    result = subprocess.run([sys.executable, "-m", "spillway.run_record", "resumable", str(run)], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "(file): a symbolic link, not followed; this run cannot be resumed" in result.stderr, result.stderr
