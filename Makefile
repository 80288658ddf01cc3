# The one task runner: developers and CI (.ci/run) call the same targets.

CARGO        ?= cargo
TARGET_DIR   := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
WASM_DIR     := $(TARGET_DIR)/wasm32-wasip2/guest
HOST         := $(TARGET_DIR)/debug/reconciler-host
GUESTS       := evidenceagent pgtoolboxconsole pgaccessrequest pgadmin
GUEST_CRATES := $(foreach g,$(GUESTS),-p $(g)-guest) -p hostile-guest -p escape-guest -p secretcheck-guest -p kstatus-guest -p legacy-v0_1-guest -p legacy-v0_2-guest -p legacy-v0_3-guest -p legacy-v0_4-guest -p legacy-v0_5-guest -p writer-guest -p mirror-guest
# The test guests (guests/testing/) that have fixtures.
TEST_GUESTS_WITH_FIXTURES := kstatus writer

.PHONY: setup guests host fixtures bless unit test lint fmt bench ci run docs deploy

# The JavaScript and Python guests (guests/js, guests/py; issue 21): built
# with componentize-js (npm, pinned in guests/js/package-lock.json) and
# componentize-py (PyPI, COMPONENTIZE_PY_VERSION, in a venv under the cache
# directory), into $(POLYGLOT_DIR) as <guest>_js.wasm and <guest>_py.wasm.
CACHE_DIR    := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reconciler-host
POLYGLOT_DIR := $(TARGET_DIR)/polyglot
JS_GUESTS    := evidenceagent escape
PY_GUESTS    := secretcheck escape
JS_TOOLS     := guests/js/node_modules/.package-lock.json
COMPONENTIZE_PY_VERSION := 0.25.1
PY_VENV      := $(CACHE_DIR)/componentize-py-$(COMPONENTIZE_PY_VERSION)
COMPONENTIZE_PY := $(PY_VENV)/bin/componentize-py
JS_SOURCES   := $(shell find guests/js -name node_modules -prune -o -name '*.js' -print) $(wildcard wit/*.wit)
PY_SOURCES   := $(shell find guests/py -name '*.py') $(wildcard wit/*.wit)

## setup: the toolchain pieces the build needs (idempotent): Rust's wasm
## target, and the JavaScript and Python guest toolchains.
setup: $(JS_TOOLS) $(COMPONENTIZE_PY)
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

## guests: every guest as a wasm component.
guests:
	$(CARGO) build --target wasm32-wasip2 --profile guest $(GUEST_CRATES)

## guests-bundled: the four bundled guests only, what `make run` serves
## (the test guests are built by `make test`, once).
.PHONY: guests-bundled
guests-bundled:
	$(CARGO) build --target wasm32-wasip2 --profile guest $(foreach g,$(GUESTS),-p $(g)-guest)

## guests-js, guests-py: the JavaScript and Python guests.
.PHONY: guests-js guests-py test-js
guests-js: $(foreach g,$(JS_GUESTS),$(POLYGLOT_DIR)/$(g)_js.wasm)
guests-py: $(foreach g,$(PY_GUESTS),$(POLYGLOT_DIR)/$(g)_py.wasm)

$(JS_TOOLS): guests/js/package.json guests/js/package-lock.json
	cd guests/js && npm ci --no-audit --no-fund

$(POLYGLOT_DIR)/%_js.wasm: $(JS_TOOLS) $(JS_SOURCES)
	@mkdir -p $(POLYGLOT_DIR)
	cd guests/js && npx componentize-js $*/src/main.js --wit ../../wit -n guest -d http fetch-event -o $@.tmp
	mv $@.tmp $@

# The escape guest calls WASI itself (guests/js/escape/wit/escape.wit): its
# world beside the contract and the WASI 0.2.12 packages jco ships.
JS_WASI_WIT := guests/js/node_modules/@bytecodealliance/jco/lib/wit/builtin/0.2.12
$(POLYGLOT_DIR)/escape_js.wasm: $(JS_TOOLS) $(JS_SOURCES) guests/js/escape/wit/escape.wit
	@rm -rf $(POLYGLOT_DIR)/escape-wit && mkdir -p $(POLYGLOT_DIR)/escape-wit/deps
	cp guests/js/escape/wit/escape.wit $(POLYGLOT_DIR)/escape-wit/
	cp wit/reconciler.wit $(POLYGLOT_DIR)/escape-wit/deps/
	cp -r $(foreach p,io clocks filesystem sockets cli random,$(JS_WASI_WIT)/wasi-$(p)) $(POLYGLOT_DIR)/escape-wit/deps/
	cd guests/js && npx componentize-js escape/src/main.js --wit $(POLYGLOT_DIR)/escape-wit -n escape -d http fetch-event -o $@.tmp
	mv $@.tmp $@

$(COMPONENTIZE_PY):
	python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet componentize-py==$(COMPONENTIZE_PY_VERSION)

$(POLYGLOT_DIR)/%_py.wasm: $(COMPONENTIZE_PY) $(PY_SOURCES)
	@mkdir -p $(POLYGLOT_DIR)
	@# From a copy: componentize-py runs the guest to snapshot it, and
	@# Python would leave __pycache__ directories in the source tree.
	rm -rf $(POLYGLOT_DIR)/py-src/$* && mkdir -p $(POLYGLOT_DIR)/py-src/$*/sdk/reconciler_sdk
	cp guests/py/sdk/reconciler_sdk/__init__.py $(POLYGLOT_DIR)/py-src/$*/sdk/reconciler_sdk/
	cp -r guests/py/$* $(POLYGLOT_DIR)/py-src/$*/
	$(COMPONENTIZE_PY) -q -d wit -w guest componentize -p $(POLYGLOT_DIR)/py-src/$*/sdk -p $(POLYGLOT_DIR)/py-src/$*/$* app -o $@.tmp
	mv $@.tmp $@

## test-js: the JavaScript SDK's and guests' unit tests (node's runner),
## the SDK's declarations type-checked (tsc), and the contract's
## declarations (guests/js/sdk/contract) current with wit/reconciler.wit.
.PHONY: js-types
test-js: $(JS_TOOLS)
	cd guests/js && node --test
	cd guests/js && npx tsc -p .
	cd guests/js && node sdk/contract.mjs --check

## test-py: the Python SDK's unit tests, its native mock's included (no
## component built: the mock's bindings come from componentize-py).
.PHONY: test-py
test-py: $(COMPONENTIZE_PY)
	cd guests/py/sdk && $(PY_VENV)/bin/python -B -m unittest discover -s tests -t .

## js-types: regenerate the contract's TypeScript declarations from the WIT.
js-types: $(JS_TOOLS)
	cd guests/js && node sdk/contract.mjs

## host: the reconciler-host binary and `stand-ins` (what `make run` runs
## beside it: host/harness/src/bin/stand-ins.rs), and nothing else of the
## test suite, but with the features `make test` resolves: one test target
## selected (the smallest, tests/support's smoke test) makes cargo resolve
## every workspace member's dev-dependencies too, so `make test` after it
## (or it after `make test`) builds no dependency and neither binary again.
host:
	$(CARGO) build --workspace --bin reconciler-host --bin stand-ins --test smoke

## fixtures: every guest's fixtures through `reconciler-host test`.
fixtures: guests guests-js guests-py host
	@echo "== fixtures of the JavaScript evidenceagent, against the Rust guest's goldens"
	$(HOST) test $(POLYGLOT_DIR)/evidenceagent_js.wasm guests/evidenceagent/fixtures/*.yaml
	@echo "== fixtures of the Python secretcheck, and of its Rust twin against the same goldens"
	$(HOST) test $(POLYGLOT_DIR)/secretcheck_py.wasm guests/py/secretcheck/fixtures/*.yaml
	$(HOST) test $(WASM_DIR)/secretcheck_guest.wasm guests/py/secretcheck/fixtures/*.yaml
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
unit: guests guests-js guests-py test-js test-py
	$(CARGO) test --workspace --no-fail-fast

## test: everything a change must pass, a two-minute soak included. Each
## of the three runs even when one before it failed (`unit` runs every test
## binary, cargo naming each that failed); the end says which failed.
test:
	@failed=""; \
	$(MAKE) unit || failed="$$failed unit"; \
	$(MAKE) fixtures || failed="$$failed fixtures"; \
	$(MAKE) soak SOAK_MINUTES=2 SOAK_SETTLING_CASES=0 || failed="$$failed soak"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi; \
	echo "make test: unit, fixtures and soak passed"

## soak: every promise at once against the local API server for
## SOAK_MINUTES (default 10): spec churn, API server restarts, 503s and
## latency, replicas killed and frozen, hot swaps, a CRD reinstalled, a
## foreign status writer, plan reviews with tampering, expiring access.
## SOAK_SEED repeats a run's choices; it prints the counts users rely on
## and fails unless every one is 0. Then the settling fuzz with
## SOAK_SETTLING_CASES child bodies (default 1000; `make test` runs 300 in
## `unit` and none here).
SOAK_MINUTES ?= 10
SOAK_SETTLING_CASES ?= 1000
.PHONY: soak
soak: guests
	SOAK_MINUTES=$(SOAK_MINUTES) $(CARGO) test -p reconciler-host --test soak
	@if [ "$(SOAK_SETTLING_CASES)" != 0 ]; then \
	  SETTLING_CASES=$(SOAK_SETTLING_CASES) $(CARGO) test -p reconciler-host --test settling random_child_bodies; \
	fi

## lint: formatting, clippy (native and wasm), and the SDK's reference
## built as a guest author reads it (rustdoc warnings denied: a broken
## link, an undocumented item); its examples run as doctests in `unit`.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --target wasm32-wasip2 $(GUEST_CRATES) -p reconciler-guest-sdk -p reconciler-netpol -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p reconciler-guest-sdk --no-deps

fmt:
	$(CARGO) fmt --all

## bench: guest evaluation through wasm against the same logic natively, and
## a pass of each language (Rust, JavaScript, Python) in one run, with each
## language's module size, cold load (compiled) and warm load (cached).
bench: guests guests-js guests-py
	$(CARGO) bench -p reconciler-host --bench evaluate

## bench-operator: the operator at scale against the local API server: N
## EvidenceAgents (BENCH_PARENTS, default 1000) to convergence, status
## writes/s in steady state, host time per pass, passes, writes, RSS,
## requests by verb and resource, writes per new agent, RSS per cached
## object; then the same with the guest's logic compiled in (the native
## baseline; BENCH_ORDER) and the ratios.
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

## bench-modules: guest modules through a loopback OCI registry (issue 33):
## the Rust and the JavaScript EvidenceAgent pushed, signed with cosign and
## pulled by digest under a verification policy, cold and warm (BENCH_PULLS,
## default 10), an unsigned push refused; then a shadow run of
## BENCH_PARENTS LegacyWidgets (default 1000) as a read-only user: its time,
## and the objects written during it (must be 0).
.PHONY: bench-modules
bench-modules: guests guests-js
	$(CARGO) bench -p reconciler-host --bench modules

## bench-shards: the ring (issue 34): BENCH_PARENTS Widgets (default
## 3000), three replicas as processes to convergence, then under churn
## (BENCH_RATE a second) a fourth joins, one leaves and one is killed;
## prints `written by two replicas at once`, `lost updates`, the longest
## time a parent had no owner, cached objects per replica over all, RSS,
## convergence and requests per second at steady state.
## BENCH_RING_SELECTION=server: the same on an API server of its own with
## KEP-5866's gate on, the replicas selecting by shardSelector.
.PHONY: bench-shards
bench-shards: guests
	$(CARGO) bench -p reconciler-host --bench shards

## docs: docs/conditions.md, generated from every guest's describe (the
## test host/tests/docs.rs fails while it is out of date).
docs: guests host
	$(HOST) docs $(foreach g,$(GUESTS),$(WASM_DIR)/$(g)_guest.wasm) > docs/conditions.md.tmp \
	  && mv docs/conditions.md.tmp docs/conditions.md || { rm -f docs/conditions.md.tmp; exit 1; }

## run: the main job on a local default: a real API server on loopback,
## the examples applied, the host making their children and reconciling
## them; prints each example's Ready (and each console's ExposureConfined),
## and fails unless each settles as its comment says.
## Its three builds run side by side (the bundled guests and the host with
## cargo, the test cluster with go: `cluster`), so the Go build fills what
## the Rust build leaves of the two cores.
run:
	$(MAKE) -j3 guests-bundled host cluster
	examples/run

## cluster: the test cluster's one Go binary (tests/apiserver/build, once
## per source hash into the cache directory; examples/run and the tests
## start it with tests/apiserver/up).
.PHONY: cluster
cluster:
	@tests/apiserver/build >/dev/null

## deploy: the CRDs and the ClusterRoles (the host's, a ring member's) of the bundled guests, and the
## ConfigMap that carries them, and the GuestModule CRD, under
## deploy/generated/.
deploy: guests host
	mkdir -p deploy/generated
	@set -e; for g in $(GUESTS); do \
	  $(HOST) crd $(WASM_DIR)/$${g}_guest.wasm > deploy/generated/$$g-crd.yaml; \
	done
	$(HOST) rbac $(foreach g,$(GUESTS),$(WASM_DIR)/$(g)_guest.wasm) > deploy/generated/rbac.yaml
	$(HOST) rbac --ring $(foreach g,$(GUESTS),$(WASM_DIR)/$(g)_guest.wasm) > deploy/generated/rbac-ring.yaml
	$(HOST) crd --guest-modules > deploy/generated/guestmodule-crd.yaml

## sdks: the guest SDKs as their ecosystems package them, each with the
## contract's WIT, into $(TARGET_DIR)/sdks and nowhere else
## (tools/pack-sdks): the Rust crate (cargo package), the npm tarball (npm
## pack) and the Python wheel (pip wheel), the last two from a copy (npm
## and setuptools write beside what they pack). host/tests/new_guest.rs
## builds a new guest of each language from these alone.
.PHONY: sdks
sdks:
	CARGO="$(CARGO)" CARGO_TARGET_DIR=$(TARGET_DIR) tools/pack-sdks $(TARGET_DIR)/sdks

## image: the host's container image without a container daemon (issue
## 36; Containerfile builds the same with one): the static binary (the
## musl target, profile `image`) and CA certificates on an empty base, user
## 65532, no shell, assembled by tools/image (go-containerregistry) as an
## OCI image layout tarball, $(IMAGE); prints its digest and size; the
## SBOM of the binary's dependencies beside it (cargo-cyclonedx, CycloneDX).
## It needs, besides Rust: a C compiler for musl, MUSL_CC (default
## musl-gcc; ring, psm, wasmtime and zstd compile C for the musl target), and Go
## (tools/image). `image-deps` (tools/image-deps) checks both before the
## build; with musl-gcc missing it installs Debian's musl-tools when it runs
## as root with apt-get (as .ci/run installs packages), else it fails
## saying what to install. It adds the Rust musl target (rustup) and
## installs cargo-cyclonedx under $(CACHE_DIR)/tools.
## image-push: pushes it to $(REGISTRY)/reconciler-host:$(VERSION)
## (INSECURE=1 for plain HTTP), prints the reference pinned to its digest
## (deploy/README.md says how to pin it), and with COSIGN_KEY signs it
## with that key and attests the SBOM to it (cosign, its Go module:
## tests/cosign).
MUSL       := x86_64-unknown-linux-musl
IMAGE_DIR  := $(TARGET_DIR)/container
IMAGE      := $(IMAGE_DIR)/reconciler-host.oci.tar
IMAGE_TOOL := $(IMAGE_DIR)/image-tool
SBOM       := $(IMAGE_DIR)/reconciler-host.cdx.json
VERSION    := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
CYCLONEDX_VERSION := 0.5.9
CYCLONEDX  := $(CACHE_DIR)/tools/bin/cargo-cyclonedx
.PHONY: image image-push image-deps
# The C compiler cc-rs runs for the musl target, named so that it is the
# one image-deps checked (on its own cc-rs looks for x86_64-linux-musl-gcc,
# then musl-gcc; Debian's musl-tools brings both).
MUSL_CC    ?= $(or $(CC_x86_64_unknown_linux_musl),musl-gcc)
$(CYCLONEDX):
	$(CARGO) install cargo-cyclonedx --version $(CYCLONEDX_VERSION) --locked --root $(CACHE_DIR)/tools

image-deps:
	@tools/image-deps $(MUSL_CC)

image: export CC_x86_64_unknown_linux_musl := $(MUSL_CC)
image: image-deps $(CYCLONEDX)
	rustup target add $(MUSL)
	$(CARGO) build --profile image --target $(MUSL) -p reconciler-host --bin reconciler-host
	@mkdir -p $(IMAGE_DIR)
	@# The SBOM of the binary's dependencies (CycloneDX 1.5, the musl target's,
	@# build-time dependencies left out): cargo-cyclonedx writes one beside every
	@# workspace member's manifest; the host's is kept, the others removed.
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(CYCLONEDX) cyclonedx -q \
	  --format json --spec-version 1.5 --target $(MUSL) --no-build-deps --override-filename reconciler-host.cdx
	mv host/reconciler-host.cdx.json $(SBOM)
	find . -name reconciler-host.cdx.json -not -path './target/*' -delete
	cd tools/image && go build -trimpath -buildvcs=false -o $(IMAGE_TOOL) .
	$(IMAGE_TOOL) build --binary $(TARGET_DIR)/$(MUSL)/image/reconciler-host \
	  --version $(VERSION) --revision "$$(git rev-parse HEAD 2>/dev/null)" \
	  --created "$$(git log -1 --format=%cI 2>/dev/null)" --out $(IMAGE)

## image-check: the image as users run it: `make image`, its entrypoint
## taken back out of the OCI layout (`image extract`: checked static), and
## `make run`'s examples served by that binary as the host. Not part of
## `make test`: the static release build is 15 minutes cold on two cores.
.PHONY: image-check
image-check: image guests-bundled host
	$(IMAGE_TOOL) extract --layout $(IMAGE) --out $(IMAGE_DIR)/reconciler-host
	HOST_BINARY=$(IMAGE_DIR)/reconciler-host examples/run

image-push: image
	@test -n "$(REGISTRY)" || { echo "image-push: give REGISTRY=<registry>/<path>" >&2; exit 1; }
	@set -e; ref=$$($(IMAGE_TOOL) push --layout $(IMAGE) --ref $(REGISTRY)/reconciler-host:$(VERSION) $(if $(INSECURE),--insecure)); \
	echo "$$ref"; \
	if [ -n "$(COSIGN_KEY)" ]; then \
	  (cd tests/cosign && go build -trimpath -buildvcs=false -o $(IMAGE_DIR)/cosign .); \
	  $(IMAGE_DIR)/cosign sign --yes --key $(COSIGN_KEY) --tlog-upload=false $(if $(INSECURE),--allow-insecure-registry) "$$ref"; \
	  $(IMAGE_DIR)/cosign attest --yes --key $(COSIGN_KEY) --tlog-upload=false $(if $(INSECURE),--allow-insecure-registry) \
	    --type cyclonedx --predicate $(SBOM) "$$ref"; \
	fi

ci: setup lint test
