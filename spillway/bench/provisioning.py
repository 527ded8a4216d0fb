"""What a provisioning is made from, so that a bench skips one that would change nothing (issue 19).

A provisioning whose inputs are unchanged reports changed=0 but still costs 45 to 90 s of Ansible on this 2-core
machine, before every bench. Its inputs are the project's files that playbooks/provision.yml reads or ships (the
playbooks and roles, the collectors, the workloads' job code, the inventory and the storage profiles, Ansible's
configuration and the pinned Python packages), what `make setup` recorded for the cluster, and the extra variables
the bench passes (placement, monitoring override). `digest()` hashes them all.

provision.yml forgets a host's record first and, when the bench passes `provision_digest`, writes it last
(`<spillway_root>/provisioned.json`), so a record exists only on a host whose last provisioning ended well with
these inputs. playbooks/provision-check.yml passes when every host holds the same digest and the cluster serves
(every Hadoop daemon running, HDFS writable and readable, every node registered, every supervised process running);
the bench then skips provision.yml, and otherwise runs it. Inventories with parallel-file-system servers always
provision: their servers' glusterd and bricks are outside that check.

A placement switch (issue 19): the record also holds `base_digest`, the digest of the same inputs without the
placement. When every host's record has the bench's base digest but another placement, and the cluster serves, the
check says so (`SWITCH_POSSIBLE` in its message) and the bench runs playbooks/placement.yml, which does only what a
placement changes (data directories, the placement's Hadoop and Spark settings and the daemons that read them,
storage.json) and writes the record of the full digest; anything else, or a failed switch, provisions in full.
"""
import json
import time
from datetime import datetime

from run_layout import RAW
from spillway import REPO, input_digests, setuprecord
from spillway.ansible import first_message
from spillway.bench.steps import changed_note
from spillway.console import Tail, indent, say
from spillway.run_record import MANIFEST_MAX_BYTES, RecordNotRead, StepFailed, read_record

# Relative to the repository: every file below these is an input of provision.yml.
INPUT_FOLDERS = ("playbooks", "collectors", "workloads")
INPUT_FILES = ("inventories/storage-profiles.yml", "ansible.cfg", "requirements.txt")
# The extra variable a placement switch changes, alone.
PLACEMENT_VAR = "spillway_placement"
# What provision-check.yml's message says on a host whose record differs from the bench's inputs in the placement
# alone, in a serving cluster.
SWITCH_POSSIBLE = "placement switch possible"


def digest(inventory, extra_vars, repo=REPO, cache_dir=setuprecord.CACHE_DIR):
    """sha256 (hex) of everything a provisioning of `inventory` with `extra_vars` is made from."""
    paths = [p for folder in INPUT_FOLDERS for p in input_digests.files_under(repo / folder)]
    paths += input_digests.files_under(inventory.path) + [repo / name for name in INPUT_FILES if (repo / name).is_file()]
    setup = setuprecord.record_path(inventory.name, cache_dir)
    return input_digests.digest(repo, paths, [("setup record", setup.read_bytes() if setup.is_file() else b""),
                                       ("extra vars", json.dumps(extra_vars, sort_keys=True, default=str).encode())])


def base_vars(extra_vars):
    """`extra_vars` without the placement: what `base_digest` is made of."""
    return {name: value for name, value in extra_vars.items() if name != PLACEMENT_VAR}


def bench_vars(inventory, placement, overrides, repo=REPO, cache_dir=setuprecord.CACHE_DIR):
    """The extra variables a bench runs provision.yml with for `placement` (and `overrides`: the MONITORING
    override's variables), `provision_digest` and `provision_base_digest` (the same inputs but the placement) among
    them: the bench checks health itself before each workload."""
    extra = {"provision_health_check": False, PLACEMENT_VAR: placement, **overrides}
    return {**extra, "provision_digest": digest(inventory, extra, repo, cache_dir),
            "provision_base_digest": digest(inventory, base_vars(extra), repo, cache_dir)}


def can_switch(inventory, check_failures):
    """Whether a failed provision-check.yml allows the placement switch instead of provision.yml: every host that
    failed it holds a record of the same inputs but the placement, in a serving cluster (its message says
    SWITCH_POSSIBLE), and the inventory has no pfs servers."""
    return (can_skip(inventory) and bool(check_failures)
            and all(SWITCH_POSSIBLE in " ".join(failure.split()) for failure in check_failures))


def can_skip(inventory):
    """Whether an unchanged provisioning of `inventory` may be skipped at all (not with pfs servers)."""
    return not inventory.groups.get("pfs_servers")


class Provisioning:
    """The provisioning of each placement group of a bench (spillway/bench/plan.py placement_groups), as recorded
    steps: provision.yml unless unchanged (or the placement switch), the hosts' facts, the daemons it started."""

    def __init__(self, steps, several_placements):
        self.steps = steps
        self.inventory = steps.inventory
        self.run = steps.run
        self.several_placements = several_placements  # then each step's name says its placement

    def provision(self, placement):
        """Provision (a no-op when nothing changed) for a placement, then record the hosts' facts."""
        self.steps.placement = placement
        label, suffix = "", ""
        if self.several_placements:
            label = f" (hdfs={placement['hdfs']}, local={placement['local']})"
            suffix = f"-hdfs_{placement['hdfs']}-local_{placement['local']}"
            # a placement the bench comes back to (the storage probe's) keeps the logs of its first provisioning
            earlier = sum(s["name"].startswith(f"provision{label}") for s in self.run.manifest["steps"])
            if earlier:  # the probe comes back to a placement twice: each step's name its own
                again = " again" + (f" (time {earlier + 1})" if earlier > 1 else "")
                label, suffix = f"{label}{again}", f"{suffix}-{earlier + 1}"
        self.provision_unless_unchanged(f"provision{label}", f"provision{suffix}")
        self.steps.timed_play(f"facts{label}", "facts.yml", f"facts{suffix}")
        load_facts(self.run, self.inventory)
        record_daemon_starts(self.run, f"provision{label}")

    def provision_unless_unchanged(self, label, log_name):
        """provision.yml, unless its check (provision-check.yml) finds every host last provisioned from the same
        inputs and the cluster serving as that provisioning left it: such a provisioning would change nothing and
        costs most of a minute. When the check finds the same inputs but the placement and a serving cluster, the
        placement switch (playbooks/placement.yml) instead, and provision.yml only should it fail. One step either
        way; `unchanged` and `switch` say which it was."""
        extra = bench_vars(self.inventory, self.steps.placement, self.steps.monitoring_vars)
        line = self.steps.progress(label)
        say(f"{line} ...")
        tail = Tail(None, label)
        tail.start()
        started = time.monotonic()
        with self.run.step(label) as entry:
            try:
                result = self._check_then_provision(entry, line, log_name, extra, started)
            finally:
                tail.stop()
            if result is None:
                return
            self.steps.record_play(entry, result, line, started)
        say(f"{line}: ok ({entry['duration_s']:.1f} s{changed_note(result)})")

    def _check_then_provision(self, entry, line, log_name, extra, started):
        """provision.yml's result, or None when the check or the placement switch made it unneeded."""
        if can_skip(self.inventory):
            check = self.steps.play("provision-check.yml", f"{log_name}.check",
                                    provision_digest=extra["provision_digest"],
                                    provision_base_digest=extra["provision_base_digest"])
            entry["check_log"] = str(check.log_path.relative_to(self.run.path))
            entry["unchanged"] = check.ok
            if check.ok:
                entry["log"], entry["ansible_changed"] = entry["check_log"], 0
                say(f"{line}: ok, unchanged since the cluster's last provisioning, not run again "
                    f"({time.monotonic() - started:.1f} s)")
                return None
            # the check's message begins "provisioning needed: " and says why
            say(f"   {first_message(check.failures) or 'provisioning needed: see ' + str(check.log_path)}")
            if not can_switch(self.inventory, check.failures):
                say("   not a placement switch alone: provisioning in full")
            elif self._switch_placement(entry, f"{line}: placement switch", log_name, extra):
                return None
        return self.steps.play("provision.yml", log_name, **extra)

    def _switch_placement(self, entry, line, log_name, extra):
        """playbooks/placement.yml: only what the placement changes, recorded in the provisioning's step (`switch`,
        its log). True when it ended well; False, saying so, when the full provisioning has to run instead (the
        switch left no provisioning record)."""
        say(f"{line} ...")
        started = time.monotonic()
        result = self.steps.play("placement.yml", f"{log_name}.switch", **extra)
        entry["switch"] = result.ok
        entry["switch_log"] = str(result.log_path.relative_to(self.run.path))
        took = time.monotonic() - started
        if not result.ok:
            say(f"{line}: FAILED after {took:.1f} s, provisioning in full instead (log: {entry['switch_log']})\n"
                f"{indent(first_message(result.failures) or 'see ' + str(result.log_path))}")
            return False
        self.steps.record_play(entry, result, line, started)
        say(f"{line}: ok ({took:.1f} s{changed_note(result)})")
        return True


def load_facts(run, inventory):
    """Each host's facts (raw/<host>/facts.json, storage.json, fetched by facts.yml) into the manifest's `hosts`.
    Read as a resumed manifest is (run_record.read_record): a resumed run's folder is untrusted input, and facts.yml
    does not write a storage.json anew for a host that no longer has one."""
    for host in inventory.hosts:
        raw = run.path / RAW / host
        facts = host_record(raw / "facts.json", {})
        if not isinstance(facts, dict):
            raise StepFailed(f"{raw / 'facts.json'}: not a JSON object; {FACTS_FIX}")
        facts["storage"] = host_record(raw / "storage.json", None)
        run.manifest["hosts"][host] = facts
    run.save()


FACTS_FIX = "remove it and run again (playbooks/facts.yml writes the host's records anew), or start a new bench"


def host_record(path, missing):
    """One of a host's records in raw/<host>/, or `missing` when the host has none; StepFailed naming the file, and
    the cap, for anything that is not a record."""
    try:
        return read_record(path)
    except FileNotFoundError:
        return missing
    except RecordNotRead as err:
        raise StepFailed(f"{path}: {err}, not read: a host's facts.json and storage.json are read only as regular "
                         f"files of at most {MANIFEST_MAX_BYTES // 2**20} MiB (docs/safety.md); {FACTS_FIX}") from None
    except (OSError, ValueError, RecursionError) as err:
        raise StepFailed(f"{path}: not readable as JSON ({type(err).__name__}: {str(err)[:200]}); "
                         f"{FACTS_FIX}") from None


def record_daemon_starts(run, label):
    """The provisioning step's `daemon_starts`: each supervised daemon it started and the CPU seconds that daemon
    had spent by the facts step just after it (facts.yml's daemon_cpu), most of it its start-up and the ready
    wait. A placement switch's JVM start-ups are most of its time on a small host (docs/performance.md)."""
    entry = next(s for s in reversed(run.manifest["steps"]) if s["name"] == label)
    since = datetime.fromisoformat(entry["started_at"]).timestamp() - 1.0  # the hosts' clocks, to a tick
    entry["daemon_starts"] = [
        {"host": host, "daemon": daemon, "cpu_s": read["cpu_s"]}
        for host, facts in run.manifest["hosts"].items()
        for daemon, read in sorted((facts.get("daemon_cpu") or {}).items())
        if read.get("started_epoch_s", 0) >= since]
    run.save()
