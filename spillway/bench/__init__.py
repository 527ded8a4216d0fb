"""The bench (`python -m spillway bench`, `make bench`): a small orchestrator (orchestrator.Bench) over parts with one
job each, which it composes:

- plan: the workload runs of a bench and its steps, validated before anything is touched (BenchPlan);
- resume: the plan of a recorded run, what of it is left, the run reopened, earlier attempts set aside;
- steps: every playbook run with the bench's extra vars and every step recorded with its progress line;
- provisioning: provision.yml unless unchanged, or the placement switch; the hosts' facts; the daemons started;
- workload_run: each workload run's begin, steps and end in one Ansible run, the end on its own after a failure;
- reporting: the report, built by `python -m analysis report` in a process of its own;
- manifest: what the manifest says of the run when it is created; dry_run: the plan printed.
"""
