# kubesched — `make run` schedules the example cluster, `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck unit integration venv clean cluster-up cluster-down

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

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -m "not integration"

integration: $(STAMP)
	$(BIN)/pytest -q -m integration

# Every test, lint and type check. pytest's exit code 5 ("no tests collected")
# is a failure here on purpose: an empty run must never look green.
test: $(STAMP) lint typecheck
	$(BIN)/pytest -q

CLUSTER_DIR ?= .cluster

# A local control plane (etcd + kube-apiserver on loopback); DIR/kubeconfig is the admin's.
cluster-up:
	hack/build-k8s.sh >/dev/null && hack/build-etcd.sh >/dev/null
	hack/cluster-up.sh $(CLUSTER_DIR)

cluster-down:
	hack/cluster-down.sh $(CLUSTER_DIR)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
