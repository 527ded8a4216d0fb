"""The bench: provision, then for every workload run start the collectors, run its prepare/run/validate steps, stop
and fetch the collectors; then build the tables and the report.

Everything is validated before anything is touched (the plan). Each step prints a progress line with its time and is
recorded in the manifest; a failed workload run is marked failed and the bench goes on with the next one; Ctrl-C
stops the collectors and leaves a readable, partial run directory, which `bench --resume` finishes.
"""
from run_layout import MANIFEST
from spillway import clusterlock
from spillway.bench import resume
from spillway.bench.dry_run import print_plan
from spillway.bench.manifest import create_run_directory
from spillway.bench.plan import count_steps, new_plan, placement_groups, protocol_text, storage_probe_text
from spillway.bench.provisioning import Provisioning
from spillway.bench.reporting import build_report
from spillway.bench.steps import Steps, local_root
from spillway.bench.workload_run import WorkloadRuns
from spillway.console import say
from spillway.host_checks import check_hosts
from spillway.monitoring import Monitoring
from spillway.run_record import StepFailed
from spillway.stopping import stop_signals_interrupt


class Bench:
    """A bench of `plan` (spillway/bench/plan.py BenchPlan), validated before anything is touched; with `resumed`
    (a resume.ResumePlan) the bench that finishes that recorded run. execute() runs it, dry_run() prints it."""

    def __init__(self, plan, resumed=None):
        self.plan = plan
        self.resumed = resumed
        self.run = None  # the run directory, once execute() created or reopened it

    @classmethod
    def planned(cls, cluster, workload_names, scale, repeat, **options):
        """A new bench from its options (spillway/bench/plan.py new_plan)."""
        return cls(new_plan(cluster, workload_names, scale, repeat, **options))

    @classmethod
    def resume(cls, ref, given=None):
        """The bench that finishes run `ref` with the plan its manifest recorded (resume.plan_to_finish)."""
        return cls(*resume.plan_to_finish(ref, given))

    @property
    def total_steps(self):
        return count_steps(self.resumed.to_run if self.resumed else self.plan.instances, self.plan.returns_to)

    def dry_run(self):
        print_plan(self.plan, self.resumed, self.total_steps)
        return 0

    def execute(self):
        inv = self.plan.inventory
        with clusterlock.held(inv.name, f"a bench on {inv.name}", inv), stop_signals_interrupt() as stop_signals:
            if self.resumed:
                self.run = self.resumed.run
                return self._run(self.resumed.reopen(self.plan), stop_signals)
            self.run = create_run_directory(self.plan)
            return self._run(self.plan.instances, stop_signals, self._banner())

    def _banner(self):
        instances = self.plan.instances
        banner = (f"Spillway bench {self.run.manifest['run_id']}: cluster '{self.plan.inventory.name}', scale "
                  f"{self.plan.scale}, {len(instances)} workload run(s): {', '.join(i.id for i in instances)}")
        probe = storage_probe_text(instances)
        return banner + f"\n  {protocol_text(self.plan)}" + (f"\n  {probe}" if probe else "")

    def _run(self, instances, stop_signals, banner=None):
        """The workload runs `instances` in the run directory, then the report; the exit status."""
        steps = Steps(self.plan.inventory, self.run, self.total_steps, self.plan.monitoring_override)
        workload_runs = WorkloadRuns(steps, self.plan,
                                     resume.EarlierAttempts(self.run, self.plan.inventory, steps.play))
        status = "completed"
        try:
            if banner:
                say(banner)
            say(f"  run directory: {self.run.path}")
            if not self._run_groups(instances, steps, workload_runs):
                status = "failed"
        except KeyboardInterrupt:
            status = "interrupted"
            self.run.manifest["stopped_by"] = stop_signals.name
            say(f"\ninterrupted ({stop_signals.name}): stopping collectors and keeping what was collected; "
                f"finish it with make bench RESUME={self.run.manifest['run_id']}")
            workload_runs.stop_collectors_quietly()
        except StepFailed as err:
            status = "failed"
            say(f"bench stopped: {err}")
        finally:
            # a resumed run is complete when every run of its plan is, the earlier sessions' included
            if status == "completed" and any(r["status"] != "ok" for r in self.run.manifest["workloads"]):
                status = "failed"
            self.run.finish(status)
        report = build_report(self.run, steps.progress("report"), rebuild_tables=bool(self.resumed))
        say(f"bench {status}: {len(instances)} workload run(s)"
            f"{' of ' + str(len(self.plan.instances)) if self.resumed else ''}, manifest {self.run.path / MANIFEST}")
        if report:
            say(str(report))
        return 0 if status == "completed" else 1

    def _run_groups(self, instances, steps, workload_runs):
        """The hosts checked, then each placement group provisioned and its workload runs run; True when every
        workload run succeeded."""
        self._preflight(steps)
        provisioning = Provisioning(steps, self.plan.several_placements)
        monitoring = None  # known once the first provisioning has run
        all_ok = True
        for group in placement_groups(instances):
            provisioning.provision(group[0].placement)
            if monitoring is None:
                monitoring = Monitoring.load(self.plan.inventory, local_root(self.plan.inventory), self.run.path)
                say(f"  monitoring: {monitoring.describe()}")
            for instance in group:
                all_ok = workload_runs.run_one(instance, monitoring) and all_ok
        back = self.plan.returns_to
        if instances and back and instances[-1].placement != back:
            provisioning.provision(back)  # the probe's switch back: the next bench skips its provisioning
        return all_ok

    def _preflight(self, steps):
        """Every host checked read-only (playbooks/preflight.yml) before anything is touched: one table."""
        say("preflight: ssh, privileges, java, storage paths, free space, ports, clock of every host ...")
        with self.run.step("preflight", log="logs/preflight.log", table="preflight.json"):
            ok, _ = check_hosts(self.plan.inventory, run_dir=self.run.path, extra_vars=steps.monitoring_vars or None)
            if not ok:
                raise StepFailed(f"preflight failed: nothing was touched; the table above names each problem and "
                                 f"its fix ({self.run.path / 'preflight.json'})")
