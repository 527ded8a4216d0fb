# Spillway: thin entry points. Logic lives in the playbooks' roles and the Python packages.
CLUSTER   ?= local
WORKLOADS ?=
SCALE     ?= tiny
REPEAT    ?= 1
WARMUP    ?=
DROP_CACHES ?=
MONITORING ?=
PARAMS    ?=
CORES     ?=
VERSIONS  ?=
PLACEMENT ?=
BACKENDS  ?=
RUN       ?= latest

# No value given to make becomes code (docs/safety.md). GNU make expands a command-line variable wherever it is used,
# and when it exports it to a recipe's environment, whatever its name: so only the documented variables below may be
# given on the command line (a name of the Makefile's own, PY, SHELL or any other, is refused before anything runs),
# and a value holding '$' is refused before any is used. CLUSTER names a folder and a lock, so it is a plain name;
# every other value reaches the shell only as one single-quoted word (shq). The two lists are `override`, so that the
# command line cannot redefine them to let itself through.
override USER_VARIABLES := CLUSTER WORKLOADS SCALE REPEAT WARMUP DROP_CACHES MONITORING PARAMS CORES VERSIONS PLACEMENT BACKENDS \
	RUN RUNS RESUME TO NODES FIO DRY_RUN MIN_STAGE_S BASELINE MAX_SLOWDOWN
override COMMAND_LINE_VARIABLES := $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v)))
$(foreach v,$(filter-out $(USER_VARIABLES),$(COMMAND_LINE_VARIABLES)),$(error $(v): not a variable of this Makefile's \
	command line (those are: $(USER_VARIABLES)); leave it out))
$(foreach v,$(COMMAND_LINE_VARIABLES),$(if $(findstring $$,$(value $(v))),$(error $(v): a value given to make may not hold '$$' (make would run it as code): leave it out)))
NAME_CHARS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
	0 1 2 3 4 5 6 7 8 9 - _
without = $(if $(2),$(call without,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
ifneq ($(call without,$(subst $(eval) ,/,$(CLUSTER)),$(NAME_CHARS)),)
$(error CLUSTER='$(CLUSTER)' is not a cluster name: letters, digits, - and _ only, the name of a folder of inventories/)
endif
shq = '$(subst ','\'',$(1))'

VENV   := .venv
PY     := $(VENV)/bin/python
PLAY   := $(VENV)/bin/ansible-playbook -i inventories/$(CLUSTER)
# The cluster check runs with the system's python3 before anything is installed or touched.
CHECK  := python3 -m spillway.cluster_check --cluster $(CLUSTER)

.DEFAULT_GOAL := help
.PHONY: help setup bench report compare test teardown venv workloads monitor predict validate-model preflight \
	cluster-up cluster-down

# Emulated clusters (an inventory with spillway_emulation, docs/emulated-cluster.md) are network namespaces on this
# machine: cluster-up creates them, teardown removes them after the usual teardown over SSH.
EMULATED := $(shell grep -qs '^spillway_emulation:' inventories/$(CLUSTER)/group_vars/all.yml && echo yes)
EMU      := $(PY) -m emulation
# A bench holds its cluster (spillway/clusterlock.py): what would destroy or disturb it refuses while it runs.
NOT_BUSY = python3 -m spillway.clusterlock check
# Every action that touches hosts runs under HOLD: the inventory is validated as Ansible will see it (host and
# group variables merged, no resource shared with another inventory) and the cluster and each of its resources
# (hosts, folders, devices, namespaces, subnet) are held until the command ends, so that no other action of any
# inventory sharing one of them runs meanwhile (docs/safety.md). Refused: exit 2, nothing touched.
HOLD = $(PY) -m spillway.clusterlock run $(CLUSTER) --as
REQUIRE_EMULATED = test -n "$(EMULATED)" || { echo "error: cluster '$(CLUSTER)' is not emulated (no spillway_emulation in inventories/$(CLUSTER)/group_vars/all.yml)" >&2; exit 2; }

help: ## Show the targets and their variables
	@echo "Spillway: what does the storage backend do to big-data workloads?"
	@echo
	@echo "  make bench    [CLUSTER=$(CLUSTER)] [WORKLOADS=a,b] [SCALE=tiny|small|...] [REPEAT=n] [WARMUP=0|1] [DROP_CACHES=1] [MONITORING=0|1]"
	@echo "               [PARAMS='rows=1000 tpch.scale_factor=1'] [CORES=1,2] [PLACEMENT=matrix BACKENDS=hdd,ssd]"
	@echo "               [VERSIONS='spark=3.5.6,4.2.0']  Spark releases swept (each in the inventory's spillway_versions)"
	@echo "  make bench    RESUME=<run-id>  finish an interrupted or failed run: only its unfinished workload runs, same plan"
	@echo "  make report   [RUN=<run-id>|latest] [THRESHOLDS=<json file>]  the rules' thresholds from a file (docs/findings.md)"
	@echo "  make compare  RUNS=\"<run-id> <run-id> ...\" [THRESHOLDS=<json file>]  the same workloads on other backends/placements, side by side"
	@echo "  make predict  RUN=<run-id> TO=<backend>|'hdfs=a,local=b' [CORES=P] [NODES=N] [FIO=<run-id>]  I/O-aware model"
	@echo "               prediction per stage (FIO: a run whose fio sweep gives the target's bandwidth)"
	@echo "  make validate-model [CLUSTER=tiers] [DRY_RUN=1] [MIN_STAGE_S=1]  profile, predict hdd/ssd/nvme, measure, print the errors"
	@echo "  make test     set up every inventory the tests use ($(TEST_CLUSTERS)), the tests that touch no live cluster on"
	@echo "               2 workers, then the live ones (the tiny bench for real, the emulated clusters) one at a time"
	@echo "  make workloads  the workloads and their scale profiles"
	@echo "  make setup    install Java, fio, sysstat, Hadoop, Spark, the Python venv (idempotent, cached)"
	@echo "  make preflight [CLUSTER=$(CLUSTER)]  read-only checks of every host (SSH, root, Java, storage, space, ports, clock)"
	@echo "  make teardown [CLUSTER=$(CLUSTER)]  stop daemons, remove emulated disks, mounts and throttles"
	@echo "               (an emulated cluster such as emu: then its namespaces, sshds and keys too)"
	@echo "  make cluster-up CLUSTER=emu  create the emulated nodes (namespaces, sshd, shaped links; idempotent)"
	@echo "  make cluster-down CLUSTER=emu  remove the emulated nodes only (prefer make teardown)"
	@echo "  make monitor  [CLUSTER=$(CLUSTER)]  the Prometheus, Pushgateway (and Grafana) URLs of the provisioned cluster"
	@echo
	@echo "Clusters: $$(ls inventories | grep -v '\.' | tr '\n' ' ')"

$(VENV)/.installed: requirements.txt
	@echo "== python venv: $(VENV) (pinned requirements.txt)"
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

venv: $(VENV)/.installed

setup: venv
	@$(CHECK)
	@$(HOLD) 'make setup CLUSTER=$(CLUSTER)' -- $(PLAY) playbooks/setup.yml \
		-e setup_inputs_digest=$$(python3 -m spillway.setuprecord digest $(CLUSTER))

# Before a bench: the setup, unless its record says the same inputs were set up and every package is still there
# (a warm setup still costs Ansible a quarter of a minute). `make setup` always runs it. The record is the machine's,
# the venv is the checkout's: a fresh clone on a set-up machine skips the setup, so the bench makes its venv after it.
SETUP_UNLESS_UNCHANGED = python3 -m spillway.setuprecord unchanged $(1) || $(MAKE) --no-print-directory setup CLUSTER=$(1)

# RESUME=<run-id>: finish that run with the plan its manifest recorded: preflight and setup of the run's cluster,
# then only the options written on make's command line are passed on (each must agree with the run's).
RESUMED = $(shell python3 -m spillway.run_record resumable $(call shq,$(RESUME)) 2>/dev/null)
given   = $(if $(filter command line environment,$(origin $(1))),--$(2) $(call shq,$($(1))))

# DRY_RUN=1: the bench's full validation (inventory, workloads, parameters, sweeps) and its plan; nothing is touched.
DRY = $(if $(DRY_RUN),--dry-run)
BENCH = $(PY) -m spillway bench --cluster $(CLUSTER) --workloads $(call shq,$(WORKLOADS)) \
	--scale $(call shq,$(SCALE)) --repeat $(call shq,$(REPEAT)) --warmup $(call shq,$(WARMUP)) \
	--drop-caches $(call shq,$(DROP_CACHES)) --monitoring $(call shq,$(MONITORING)) --params $(call shq,$(PARAMS)) --cores $(call shq,$(CORES)) \
	--placement $(call shq,$(PLACEMENT)) --backends $(call shq,$(BACKENDS)) --versions $(call shq,$(VERSIONS))
# Before setup, cluster-up or anything else is touched, the whole plan is validated (an unsupported workload and Spark
# release, a release the inventory does not install, ...) where the checkout's venv exists; the bench validates it
# again once the venv is made.
bench: $(if $(DRY_RUN),venv) ## provision if needed, run the workloads, collect, report (RESUME=<run-id>: finish an interrupted run)
ifdef RESUME
	@python3 -m spillway.run_record resumable $(call shq,$(RESUME)) >/dev/null
	$(if $(DRY_RUN),,@python3 -m spillway.cluster_check $(RESUMED) --ports)
	$(if $(DRY_RUN),,@$(NOT_BUSY) $(word 2,$(RESUMED)))
	$(if $(DRY_RUN),,@if grep -qs '^spillway_emulation:' inventories/$(word 2,$(RESUMED))/group_vars/all.yml; then \
		$(MAKE) --no-print-directory cluster-up CLUSTER=$(word 2,$(RESUMED)); fi)
	$(if $(DRY_RUN),,@$(call SETUP_UNLESS_UNCHANGED,$(word 2,$(RESUMED))))
	$(if $(DRY_RUN),,@$(MAKE) --no-print-directory venv)
	@$(PY) -m spillway bench $(DRY) --resume $(call shq,$(RESUME)) $(call given,CLUSTER,cluster) \
		$(call given,WORKLOADS,workloads) $(call given,SCALE,scale) $(call given,REPEAT,repeat) \
		$(call given,WARMUP,warmup) $(call given,DROP_CACHES,drop-caches) $(call given,MONITORING,monitoring) \
		$(call given,PARAMS,params) \
		$(call given,CORES,cores) $(call given,PLACEMENT,placement) $(call given,BACKENDS,backends) \
		$(call given,VERSIONS,versions)
else
	$(if $(DRY_RUN),,@$(CHECK) --workloads $(call shq,$(WORKLOADS)) --scale $(call shq,$(SCALE)) --ports)
	$(if $(DRY_RUN),,$(if $(wildcard $(PY)),@$(BENCH) --dry-run >/dev/null))
	$(if $(DRY_RUN),,@$(NOT_BUSY) $(CLUSTER))
	$(if $(DRY_RUN),,$(if $(EMULATED),@$(MAKE) --no-print-directory cluster-up))
	$(if $(DRY_RUN),,@$(call SETUP_UNLESS_UNCHANGED,$(CLUSTER)))
	$(if $(DRY_RUN),,@$(MAKE) --no-print-directory venv)
	@$(BENCH) $(DRY)
endif

workloads: venv ## list the workloads and what each scale profile means
	@$(PY) -m spillway workloads

report: venv
	@$(PY) -m analysis report $(call shq,$(RUN)) $(if $(THRESHOLDS),--thresholds=$(call shq,$(THRESHOLDS)))

compare: venv ## one page comparing runs (backends, placements, cores): RUNS="<id> <id> ..." [BASELINE=<id> MAX_SLOWDOWN=5%]
	@test -n $(call shq,$(RUNS)) || { echo 'error: RUNS="<run-id> <run-id> ..." is required (see results/)' >&2; exit 2; }
	@$(PY) -m analysis compare $(foreach run,$(RUNS),$(call shq,$(run))) \
		$(if $(BASELINE),--baseline=$(call shq,$(BASELINE))) $(if $(MAX_SLOWDOWN),--max-slowdown=$(call shq,$(MAX_SLOWDOWN))) \
		$(if $(THRESHOLDS),--thresholds=$(call shq,$(THRESHOLDS)))

predict: venv ## I/O-aware model: fit on RUN, predict TO (docs/models.md)
	@test -n $(call shq,$(TO)) || { echo "error: TO=<backend> or TO='hdfs=<backend>,local=<backend>' is required" >&2; exit 2; }
	@$(PY) -m analysis predict $(call shq,$(RUN)) --to $(call shq,$(TO)) $(if $(CORES),--cores $(call shq,$(CORES))) \
		$(if $(NODES),--nodes $(call shq,$(NODES))) $(if $(FIO),--fio $(call shq,$(FIO)))

# The model's validation runs on the three-tier emulated cluster unless CLUSTER is given on the command line.
VALIDATE_CLUSTER = $(if $(filter command line,$(origin CLUSTER)),$(CLUSTER),tiers)
validate-model: venv ## benches on hdd/ssd/nvme, then predicted vs measured per stage (DRY_RUN=1: the plan only)
	@$(if $(DRY_RUN),true,python3 -m spillway.cluster_check --cluster $(VALIDATE_CLUSTER))
	@$(if $(DRY_RUN),true,$(call SETUP_UNLESS_UNCHANGED,$(VALIDATE_CLUSTER)))
	@$(PY) -m experiments.validate_model --cluster $(VALIDATE_CLUSTER) $(if $(DRY_RUN),--dry-run) \
		$(if $(MIN_STAGE_S),--min-stage-s $(call shq,$(MIN_STAGE_S)))

# Every inventory the integration tests provision (tests/integration: local; tests/emulation: emu, pfs). `make test`
# sets each one up first (as `make bench` does: skipped when its record holds the same inputs and every package is
# there, docs/setup.md), then checks each setup record; the tests check their inventory's record again before they
# touch anything, so a package only an earlier manual step installed fails up front with its fix named.
TEST_CLUSTERS := local emu pfs

# Then the tests in two halves that together are all of them. The tests not marked integration (recorded outputs,
# scratch inventories and state under tmp_path) are CPU-bound and independent of each other: two pytest-xdist
# workers, each test file on one worker (a module's fixtures, such as a Spark job built and run once for all its
# tests, are not made twice). The live ones (marked integration) share this machine's clusters, ports and disks: one
# at a time. The first half runs beside the live tests of the emulated clusters (tests/emulation, about 13 minutes
# alone) at the lowest CPU priority, to take the CPU they leave idle; the emulated nodes have network namespaces of
# their own, so no port is shared. They leave less than hoped (their nodes run at nice 10): together 1137 s against
# 1226 s one after the other (docs/performance.md, 2026-11-27, stop 40). The live tests marked throwaway (their own
# loop devices, tmpfs and inventories below tmp_path, checks of only those, no speed asserted: the storage role's
# safety and pfs rules) join the first half: about 2 minutes of CPU-bound Ansible that otherwise ran alone.
# Its output is printed when both are done; then the other live tests run alone: they use this machine's own ports,
# which some of the first half's tests of the harness's checks look at. The first half has a session of its own
# (setsid: a background job ignores Ctrl-C) that a Ctrl-C or a TERM to make test ends with all it started.
# A Ctrl-C or a collection error (pytest exit 2) stops make test before the other live tests; otherwise every part
# runs whatever the others' failures, and make test fails when any fails, its last lines naming which (each part's
# -ra summary ends that part's own output).
test: venv ## set up every inventory the tests provision, then the tests without a live cluster and the throwaway-device ones (2 workers, beside the emulated clusters' live tests), then the other live ones
	@for cluster in $(TEST_CLUSTERS); do \
		echo "== make test: setup of inventory $$cluster (make setup CLUSTER=$$cluster, unless nothing it installs from changed)"; \
		{ $(call SETUP_UNLESS_UNCHANGED,$$cluster); } || exit 1; \
	done
	@python3 -m spillway.setuprecord check $(TEST_CLUSTERS)
	@command -v chromium >/dev/null || { echo "== make test: Debian's chromium, for the report pages' browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@unit_log=$$(mktemp /tmp/spillway-unit-tests.XXXXXX); unit_pid=; trap 'rm -f "$$unit_log"' EXIT; \
	trap 'test -z "$$unit_pid" || kill -TERM -$$unit_pid 2>/dev/null; echo "== make test: interrupted: the tests that touch no live cluster were stopped, the other live tests are not started" >&2; exit 2' INT TERM; \
	echo "== make test: the tests that touch no live cluster (not integration) and the live ones on throwaway devices of their own (throwaway), on 2 workers at CPU priority nice 19, beside the live tests of the emulated clusters (their output follows theirs)"; \
	setsid nice -n 19 $(PY) -m pytest tests -m "not integration or throwaway" -n 2 --dist loadfile --durations=15 > "$$unit_log" 2>&1 & unit_pid=$$!; \
	echo "== make test: the live tests of the emulated clusters (integration, tests/emulation), one at a time"; \
	$(PY) -m pytest tests/emulation -m integration --durations=10; emulated=$$?; \
	wait $$unit_pid; unit=$$?; \
	echo "== make test: the output of the tests that touch no live cluster or only throwaway devices"; cat "$$unit_log"; \
	test $$unit -ne 2 && test $$emulated -ne 2 || { echo "== make test: interrupted (Ctrl-C or a collection error): the other live tests are not started" >&2; exit 2; }; \
	echo "== make test: the other live tests (integration), one at a time"; \
	$(PY) -m pytest tests -m "integration and not throwaway" --ignore=tests/emulation --durations=25; live=$$?; \
	test $$unit -eq 0 || echo "== make test: FAILED: the tests that touch no live cluster or only throwaway devices (pytest exit $$unit; their summary is above the live tests' output)" >&2; \
	test $$emulated -eq 0 || echo "== make test: FAILED: the live tests of the emulated clusters (pytest exit $$emulated; their summary is above)" >&2; \
	test $$live -eq 0 || echo "== make test: FAILED: the other live tests (pytest exit $$live)" >&2; \
	test $$unit -eq 0 && test $$emulated -eq 0 && test $$live -eq 0

preflight: venv ## read-only checks of every host before provisioning, one table (docs/cluster.md)
	@$(CHECK)
	@$(PY) -m spillway preflight --cluster $(CLUSTER)

teardown: venv
	@$(NOT_BUSY) $(CLUSTER)
	@$(CHECK)
	@$(HOLD) 'make teardown CLUSTER=$(CLUSTER)' -- sh -c '$(if $(EMULATED),! $(EMU) is-up --cluster $(CLUSTER) || )$(PLAY) playbooks/teardown.yml$(if $(EMULATED), && $(EMU) down --cluster $(CLUSTER))'

cluster-up: venv ## create an emulated cluster's nodes (docs/emulated-cluster.md)
	@$(REQUIRE_EMULATED)
	@$(CHECK)
	@$(HOLD) 'make cluster-up CLUSTER=$(CLUSTER)' -- $(EMU) up --cluster $(CLUSTER)

cluster-down: venv ## remove an emulated cluster's nodes without the teardown playbook
	@$(REQUIRE_EMULATED)
	@$(NOT_BUSY) $(CLUSTER)
	@$(HOLD) 'make cluster-down CLUSTER=$(CLUSTER)' -- $(EMU) down --cluster $(CLUSTER)

# The monitoring role writes the URLs on the controller (docs/monitoring.md); this reads them where that is this host.
MONITORING_JSON := /var/lib/spillway/$(CLUSTER)/monitoring.json
monitor: ## the monitoring URLs of the provisioned cluster
	@test -f $(MONITORING_JSON) || { echo "error: cluster '$(CLUSTER)' has no monitoring here ($(MONITORING_JSON) is missing): provision it with 'make bench CLUSTER=$(CLUSTER)', or it runs with spillway_monitoring.enabled: false (docs/monitoring.md)" >&2; exit 2; }
	@python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); \
		print("Prometheus UI:  " + m["prometheus_url"] + "  (targets: " + m["prometheus_url"] + "/targets)"); \
		print("Pushgateway:    " + m["pushgateway_url"]); \
		print("Grafana:        " + (m["grafana_url"] or "not enabled (spillway_monitoring.grafana.enabled)")); \
		[print("node_exporter:  " + url + "  (" + host + ")") for host, url in sorted(m["node_exporters"].items())]' $(MONITORING_JSON)
