# The one task runner: developers and CI (.ci/run) call the same targets.

CARGO        ?= cargo
TARGET_DIR   := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
WASM_DIR     := $(TARGET_DIR)/wasm32-wasip2/guest
HOST         := $(TARGET_DIR)/debug/reconciler-host
GUESTS       := evidenceagent pgtoolboxconsole pgaccessrequest pgadmin
GUEST_CRATES := $(foreach g,$(GUESTS),-p $(g)-guest) -p hostile-guest -p kstatus-guest -p legacy-v0_1-guest -p legacy-v0_2-guest -p legacy-v0_3-guest -p writer-guest
# The test guests (guests/testing/) that have fixtures.
TEST_GUESTS_WITH_FIXTURES := kstatus

.PHONY: setup guests host stand-ins fixtures bless unit test lint fmt bench ci run docs deploy

## setup: the toolchain pieces the build needs (idempotent).
setup:
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

## guests: every guest as a wasm component.
guests:
	$(CARGO) build --target wasm32-wasip2 --profile guest $(GUEST_CRATES)

## host: the reconciler-host binary, built with the workspace's test
## feature set so that `make test` after it (or it after `make test`)
## reuses every artifact instead of building the dependencies twice.
host:
	$(CARGO) test --workspace --no-run

## fixtures: every guest's fixtures through `reconciler-host test`.
fixtures: guests host
	@set -e; for g in $(GUESTS); do \
	  echo "== fixtures of $$g"; \
	  $(HOST) test $(WASM_DIR)/$${g}_guest.wasm guests/$$g/fixtures/*.yaml; \
	done
	@set -e; for g in $(TEST_GUESTS_WITH_FIXTURES); do \
	  echo "== fixtures of the test guest $$g"; \
	  $(HOST) test $(WASM_DIR)/$${g}_guest.wasm guests/testing/$$g/fixtures/*.yaml; \
	done

## bless: rewrite the golden files (fixture outcomes, CLI output) from what
## the code produces now; review the diff before committing.
bless: guests host
	@set -e; for g in $(GUESTS); do \
	  $(HOST) test --bless $(WASM_DIR)/$${g}_guest.wasm guests/$$g/fixtures/*.yaml; \
	done
	@set -e; for g in $(TEST_GUESTS_WITH_FIXTURES); do \
	  $(HOST) test --bless $(WASM_DIR)/$${g}_guest.wasm guests/testing/$$g/fixtures/*.yaml; \
	done
	BLESS=1 $(CARGO) test -p reconciler-host --test cli

## unit: every crate's tests (the host's runtime tests build the guests they load).
unit: guests
	$(CARGO) test --workspace

## test: everything a change must pass.
test: unit fixtures

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --target wasm32-wasip2 $(GUEST_CRATES) -p reconciler-guest-sdk -p reconciler-netpol -- -D warnings

fmt:
	$(CARGO) fmt --all

## bench: guest evaluation through wasm against the same logic natively.
bench: guests
	$(CARGO) bench -p reconciler-host --bench evaluate

## bench-operator: the operator at scale against the local API server: N
## EvidenceAgents (BENCH_PARENTS, default 1000) to convergence, status
## writes/s in steady state, host time per pass, passes, writes, RSS.
## `cargo bench` runs the release host (no LTO): the first build takes 10+
## minutes on two cores, later ones only relink what changed.
.PHONY: bench-operator
bench-operator: guests
	$(CARGO) bench -p reconciler-host --bench operator

## bench-hotswap: a hot swap under load (issue 7): N Hostile objects
## (BENCH_OBJECTS, default 100) whose specs change at BENCH_RATE a second
## (default 200) while the variant-message module lands through a
## ConfigMap-style ..data flip: passes/s before and during the swap, time
## until every object shows the new module, guest errors, lost updates.
.PHONY: bench-hotswap
bench-hotswap: guests
	$(CARGO) bench -p reconciler-host --bench hotswap

## docs: docs/conditions.md, generated from every guest's describe (the
## test host/tests/docs.rs fails while it is out of date).
docs: guests host
	$(HOST) docs $(foreach g,$(GUESTS),$(WASM_DIR)/$(g)_guest.wasm) > docs/conditions.md.tmp \
	  && mv docs/conditions.md.tmp docs/conditions.md || { rm -f docs/conditions.md.tmp; exit 1; }

## stand-ins: what `make run` runs beside the host in place of a kubelet
## and an ingress controller (host/harness/src/bin/stand-ins.rs), built
## with the workspace's test feature set as `host` is (`--tests`: those
## `host` built are reused), so no dependency is built twice.
stand-ins: host
	$(CARGO) build --workspace --tests --bin stand-ins

## run: the main job on a local default: a real API server on loopback,
## the examples applied, the host making their children and reconciling
## them; prints each example's Ready (and each console's ExposureConfined),
## and fails unless each settles as its comment says.
run: guests host stand-ins
	examples/run

## deploy: the CRDs and the ClusterRole of the bundled guests, and the
## ConfigMap that carries them, under deploy/generated/.
deploy: guests host
	mkdir -p deploy/generated
	@set -e; for g in $(GUESTS); do \
	  $(HOST) crd $(WASM_DIR)/$${g}_guest.wasm > deploy/generated/$$g-crd.yaml; \
	done
	$(HOST) rbac $(foreach g,$(GUESTS),$(WASM_DIR)/$(g)_guest.wasm) > deploy/generated/rbac.yaml

ci: setup lint test
