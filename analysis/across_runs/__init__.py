"""Metrics across runs: what the comparison page shows, computed from several runs' tables (metrics layer).

A *configuration* is (run, HDFS placement, local-dir placement, executor cores): one run can hold several
(PLACEMENT=matrix, CORES sweep). Its label names only what differs between the configurations compared, in
storage-profile terms (`hdd`, `nvme`), so that a column reads as the thing being compared. Every median is over
measured repetitions (warm-ups, failed and invalid runs left out); every ratio states its spread.

One module per concern: the compared runs and their workload runs matched like with like (`runs`), the
configurations' labels and order (`configurations`), times with their speedups and verdicts (`times`), I/O volumes
and throughput (`volumes`), the Darshan-style I/O pattern views (`io_patterns`), fio curves and their ratios
(`fio`), and what differed between the runs' manifests (`differences`).
"""
