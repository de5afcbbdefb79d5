# kubesched — `make run` schedules the example cluster, `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock
UV     := $(BIN)/uv

.PHONY: proto field-schemas run test docs lint typecheck unit integration venv clean cluster-up cluster-down chaos soak soak-live lock lock-check readme reference \
	browser-deps report-screenshot

# The venv holds exactly requirements.lock, then kubesched itself (editable, no deps).
# uv is pinned in the lock too: pip installs that version, `uv pip sync` keeps it.
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$$(grep -E '^uv==' $(LOCK))"
	$(UV) pip sync --quiet --python $(BIN)/python $(LOCK)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

# Exact pins for every platform and Python >= 3.11, from the ranges in pyproject.toml.
LOCK_COMPILE = $(UV) pip compile --quiet --universal --python-version 3.11 --extra dev \
	--custom-compile-command "make lock" pyproject.toml

# Resolve again: pins that still fit are kept (uv prefers an output file's versions),
# so only a change in pyproject.toml changes the lock.
lock: $(STAMP)
	$(LOCK_COMPILE) -o $(LOCK)

# The lock matches pyproject.toml: resolving again from it changes nothing.
lock-check: $(STAMP)
	@tmp=$$(mktemp) && cp $(LOCK) $$tmp && $(LOCK_COMPILE) -o $$tmp \
	  && diff -u $(LOCK) $$tmp; status=$$?; rm -f $$tmp; \
	  if [ $$status -ne 0 ]; then echo "$(LOCK) does not match pyproject.toml: run make lock" >&2; fi; \
	  exit $$status

venv: $(STAMP)

# src/kubesched/kube/protobuf/k8s.binpb: the Kubernetes protobuf descriptors at
# hack/k8s-version (needs Go and PyPI; the file is committed, so only a version bump
# needs this).
proto: $(STAMP)
	hack/gen-proto.sh

# src/kubesched/cluster/validation/field_schemas.json.gz: the fields of each kind
# simulate reads, from the OpenAPI v3 documents of k8s.io/kubernetes at hack/k8s-version
# (needs Go when that module is not in the Go module cache; the file is committed, so
# only a version bump needs this).
field-schemas: $(STAMP)
	$(BIN)/python hack/gen-field-schemas.py

# The README's plugin table, from the plugin registry (tests/packaging/test_readme.py checks it).
readme: $(STAMP)
	$(BIN)/python -m tests.packaging.readme_plugins --write

# docs/reference/config.md and metrics.md, from the config loader and the metrics
# (tests/docs/test_reference_config.py and test_reference_metrics.py check them).
reference: $(STAMP)
	$(BIN)/python -m tests.docs.reference_config --write
	$(BIN)/python -m tests.docs.reference_metrics --write

run: $(STAMP)
	$(BIN)/kubesched simulate -f examples/cluster --config examples/scheduler-config.yaml --seed 1

lint: $(STAMP)
	$(BIN)/ruff format --check src tests examples bench
	$(BIN)/ruff check src tests examples bench
	$(BIN)/lint-imports
	$(BIN)/hadolint deploy/Dockerfile

# The documentation site (mkdocs.yml) into site/: strict, so a broken link, a missing
# page or a docstring the reference cannot render fails the build.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

typecheck: $(STAMP)
	$(BIN)/mypy

# Chromium and chromedriver from Debian's packages (tests/browser, the HTML report).
browser-deps:
	hack/install-chromium.sh

unit: $(STAMP) browser-deps
	$(BIN)/pytest -q -m "not integration"

integration: $(STAMP)
	$(BIN)/pytest -q -m integration

# Every test, lint (ruff, the import-linter layer contracts) and type check. pytest's exit code 5 ("no tests collected")
# is a failure here on purpose: an empty run must never look green.
test: $(STAMP) lock-check lint typecheck docs browser-deps
	$(BIN)/pytest -q

# docs/report.png and docs/report-explain.png: the example cluster's HTML report
# (kubesched simulate --html) in headless Chromium.
report-screenshot: $(STAMP) browser-deps
	$(BIN)/python -m tests.browser.screenshot --out docs

CLUSTER_DIR ?= .cluster

# A local control plane (etcd, kube-apiserver and kube-controller-manager on loopback,
# see hack/README.md); DIR/kubeconfig is the admin's.
cluster-up:
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	hack/cluster-up.sh $(CLUSTER_DIR)

cluster-down:
	hack/cluster-down.sh $(CLUSTER_DIR)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# kubesched vs kube-scheduler (docs/develop/benchmarks.md): in-process and end to end on
# a control plane of its own. WORKLOAD=all|Name[,Name]  SIZE=tiny|small|500|5000|15000
# (5000 and 15000: median of 3 unless --repeat). BENCH_MODE=all or some of
# inprocess,e2e,backlog,ceiling; BENCH_ARGS (e.g. --kubesched-rev HEAD); see
# python -m bench --help. Results in bench-results/ (JSON + PNG).
WORKLOAD   ?= all
SIZE       ?= small
BENCH_MODE ?= all
BENCH_ARGS ?=

.PHONY: bench
bench: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m bench --workload $(WORKLOAD) --size $(SIZE) --mode $(BENCH_MODE) $(BENCH_ARGS)

# Pods placed by greedy and by the batch engine on packing traces (bench/quality.py).
.PHONY: bench-quality
bench-quality: $(STAMP)
	$(BIN)/python -m bench.quality --timeout 1

# What `kubesched explain` costs beyond the simulation on EXPLAIN_NODES nodes (bench/explain.py).
EXPLAIN_NODES ?= 5000
EXPLAIN_PODS  ?= 200
.PHONY: bench-explain
bench-explain: $(STAMP)
	$(BIN)/python -m bench.explain --nodes $(EXPLAIN_NODES) --pods $(EXPLAIN_PODS) --repeat 3

# The HTML report on EXPLAIN_NODES nodes (bench/html_report.py): the page's size, the time
# to render it, and Chromium's time to load and draw it.
.PHONY: bench-html
bench-html: $(STAMP) browser-deps
	$(BIN)/python -m bench.html_report --nodes $(EXPLAIN_NODES) --repeat 3

# Coscheduling in process (bench/gangs.py): 100 gangs of 8 GPU pods among 800 single
# pods on 90 nodes of 8 GPUs; gangs placed whole, none in part, and the time.
.PHONY: bench-gangs
bench-gangs: $(STAMP)
	$(BIN)/python -m bench.gangs --gangs 100 --size 8 --singles 800 --nodes 90 --repeat 3

# kube-scheduler with and without `kubesched extender` (bench/extender.py): its pods/s,
# the latency the extender adds per pod (p50, p99) and the extender's own request
# durations, at EXT_NODES nodes, EXT_PODS pods per run, median of EXT_REPEAT; on a
# control plane of its own. EXT_ARGS: more options (e.g. --whole-nodes-at 500,5000).
# 10-15 minutes on 2 cores. Results in bench-results/extender-<timestamp>.json.
EXT_NODES  ?= 500,5000
EXT_PODS   ?= 1000
EXT_REPEAT ?= 3
EXT_ARGS   ?=
.PHONY: bench-extender
bench-extender: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m bench.extender --nodes $(EXT_NODES) --pods $(EXT_PODS) --repeat $(EXT_REPEAT) $(EXT_ARGS)

# What-if at scale (docs/develop/benchmarks.md "Plan and sweep"): `kubesched plan
# --add-nodes` on PLAN_PODS pending pods x 10 templates against its bound and
# cluster-autoscaler's estimator, `--remove-nodes` on a PLAN_NODES-node cluster at 50%
# utilisation (bench/plan.py); then `kubesched sweep` of SWEEP_VARIATIONS variations of a
# SWEEP_NODES-node cluster in one process, on local workers and on a local Ray cluster
# (bench/sweep.py), with the scaling efficiency. Medians of PLAN_REPEAT runs.
PLAN_PODS        ?= 1000
PLAN_NODES       ?= 1000
PLAN_TIMEOUTS    ?= 5,20
PLAN_REPEAT      ?= 3
SWEEP_NODES      ?= 1000
SWEEP_VARIATIONS ?= 100
.PHONY: bench-plan
bench-plan: $(STAMP)
	$(BIN)/python -m bench.plan --pods $(PLAN_PODS) --nodes $(PLAN_NODES) \
		--timeouts $(PLAN_TIMEOUTS) --repeat $(PLAN_REPEAT)
	$(BIN)/python -m bench.sweep --nodes $(SWEEP_NODES) --variations $(SWEEP_VARIATIONS) \
		--repeat $(PLAN_REPEAT)

# Differential run against the real kube-scheduler (docs/explanation/differential.md): N generated
# scenarios of series SEED on a control plane of its own; agreement rates, and each
# disagreement written to tests/differential/regressions/. Every generator feature is on
# (nothing disabled) unless FEATURES=spread,affinity,preemption,volumes,dra picks some
# (FEATURES=none: none).  DIFF_SIZE=small|normal|large  SHRINK=1 (minimise disagreements)
# KUBESCHED_SRC=<dir holding a kubesched/ package> to test that source instead of src/.
# JOBS=K runs K control planes side by side (scenarios shared out, one report).
N ?= 50
SEED ?= 1
DIFF_SIZE ?= normal
FEATURES ?=
JOBS ?= 1
# KUBESCHED_CONTENT_TYPE=application/json: kubesched talks JSON (kube-scheduler keeps protobuf).
KUBESCHED_CONTENT_TYPE ?=
.PHONY: diff
diff: $(STAMP)
	PYTHONPATH=$(if $(KUBESCHED_SRC),$(KUBESCHED_SRC):).$(if $(PYTHONPATH),:$(PYTHONPATH)) \
	$(BIN)/python -m tests.differential.run -n $(N) --seed $(SEED) --size $(DIFF_SIZE) \
		--jobs $(JOBS) $(if $(FEATURES),--features $(FEATURES)) $(if $(SHRINK),--shrink) \
		$(if $(KUBESCHED_CONTENT_TYPE),--kubesched-content-type $(KUBESCHED_CONTENT_TYPE))

# Fuzz loader -> simulate -> report with N mutated real manifests (tests/fuzz, docs/develop/reliability.md
# "Fuzzing"): each case in a worker subprocess (2 GiB of address space, FUZZ_TIMEOUT seconds);
# prints the tracebacks, crashes, hangs and runs over 2 GiB; cases that gave one go to fuzz-results/.
FUZZ_TIMEOUT ?= 30
FUZZ_SEED ?= 1
.PHONY: fuzz
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.run -n $(N) --timeout $(FUZZ_TIMEOUT) --seed $(FUZZ_SEED) --save fuzz-results

# Hardening runs (docs/develop/reliability.md), each on a control plane of its own; exit non-zero on
# a finding. chaos: two leader-elected `kubesched run` replicas under a steady pod load,
# the leader killed every 10 s, kube-apiserver killed twice, etcd compacted, pods
# re-created; counts lost pods, double binds, overcommitted nodes, tracebacks.
# soak: a simulated week (SOAK_DAYS) of node and pod churn through the scheduler, in
# process; fails if its memory or its objects keep growing (tests/chaos/soak_week.py).
# soak-live: one `kubesched run` replica under pod churn on a control plane for
# SOAK_MINUTES of real time; fails if its RSS keeps growing (tests/chaos/soak.py).
CHAOS_PODS   ?= 2000
SOAK_DAYS    ?= 7
SOAK_MINUTES ?= 30
chaos: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m tests.chaos.chaos --pods $(CHAOS_PODS)

soak: $(STAMP)
	$(BIN)/python -m tests.chaos.soak_week --days $(SOAK_DAYS)

soak-live: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m tests.chaos.soak --minutes $(SOAK_MINUTES)
