# kubesched — `make run` schedules the example cluster, `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck unit integration venv clean cluster-up cluster-down chaos soak

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/kubesched simulate -f examples/cluster --seed 1

lint: $(STAMP)
	$(BIN)/ruff format --check src tests examples
	$(BIN)/ruff check src tests examples
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -m "not integration"

integration: $(STAMP)
	$(BIN)/pytest -q -m integration

# Every test, lint (ruff, the import-linter layer contracts) and type check. pytest's exit code 5 ("no tests collected")
# is a failure here on purpose: an empty run must never look green.
test: $(STAMP) lint typecheck
	$(BIN)/pytest -q

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

# kubesched vs kube-scheduler (docs/benchmarks.md): in-process and end to end on
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

# What `kubesched explain` costs beyond the simulation on EXPLAIN_NODES nodes (bench/explain.py).
EXPLAIN_NODES ?= 5000
EXPLAIN_PODS  ?= 200
.PHONY: bench-explain
bench-explain: $(STAMP)
	$(BIN)/python -m bench.explain --nodes $(EXPLAIN_NODES) --pods $(EXPLAIN_PODS) --repeat 3

# Differential run against the real kube-scheduler (docs/differential.md): N generated
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
.PHONY: diff
diff: $(STAMP)
	PYTHONPATH=$(if $(KUBESCHED_SRC),$(KUBESCHED_SRC):).$(if $(PYTHONPATH),:$(PYTHONPATH)) \
	$(BIN)/python -m tests.differential.run -n $(N) --seed $(SEED) --size $(DIFF_SIZE) \
		--jobs $(JOBS) $(if $(FEATURES),--features $(FEATURES)) $(if $(SHRINK),--shrink)

# Fuzz loader -> simulate -> report with N mutated real manifests (tests/fuzz, docs/reliability.md
# "Fuzzing"): each case in a worker subprocess (2 GiB of address space, FUZZ_TIMEOUT seconds);
# prints the tracebacks, crashes, hangs and runs over 2 GiB; cases that gave one go to fuzz-results/.
FUZZ_TIMEOUT ?= 30
FUZZ_SEED ?= 1
.PHONY: fuzz
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.run -n $(N) --timeout $(FUZZ_TIMEOUT) --seed $(FUZZ_SEED) --save fuzz-results

# Hardening runs (docs/reliability.md), each on a control plane of its own; exit non-zero on
# a finding. chaos: two leader-elected `kubesched run` replicas under a steady pod load,
# the leader killed every 10 s, kube-apiserver killed twice, etcd compacted, pods
# re-created; counts lost pods, double binds, overcommitted nodes, tracebacks.
# soak: one replica under pod churn for SOAK_MINUTES; fails if its RSS keeps growing.
CHAOS_PODS   ?= 2000
SOAK_MINUTES ?= 30
chaos: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m tests.chaos.chaos --pods $(CHAOS_PODS)

soak: $(STAMP)
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	$(BIN)/python -m tests.chaos.soak --minutes $(SOAK_MINUTES)
