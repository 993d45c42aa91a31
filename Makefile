# farm-apiserver: common tasks. `make test` is what CI runs (.ci/run).

PORT ?= 8443
KUBECONFIG_OUT ?= ./farm.kubeconfig
IMAGE ?= farm-apiserver:0.1.0
CARGO ?= cargo

SOAK_SECONDS ?= 60
FUZZ_SECONDS ?= 15
CONFORMANCE_GENERATED ?= 3000
CONFORMANCE_SEED ?= random
MUTANTS ?=

.PHONY: build run test unit e2e ha conformance conformance-examples conformance-mutants bench profile-peers soak fuzz fmt lint openapi certs manifests release-manifests image node node-down node-test dev clean

build: ## Build the server (debug).
	$(CARGO) build --locked

run: ## Run standalone on 127.0.0.1:$(PORT), writing a kubeconfig for kubectl.
	$(CARGO) run --locked -- serve --standalone --bind-address 127.0.0.1 --secure-port $(PORT) --write-kubeconfig $(KUBECONFIG_OUT)

test: ## Everything CI checks: formatting, lints, rustdoc without warnings, unit, black-box, kubectl and real-control-plane tests.
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries
	$(CARGO) fmt --all --check
	rustfmt --check --edition 2024 fuzz/fuzz_targets/*.rs
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --workspace --no-deps
	$(CARGO) test --locked --workspace --lib --bins --tests
	$(CARGO) test --locked --workspace --doc

unit: ## Unit tests only.
	$(CARGO) test --locked --workspace --lib

e2e: ## Only the tests against a real control plane (ETCD / KUBE_APISERVER / KUBE_CONTROLLER_MANAGER to bring your own).
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries
	$(CARGO) test --locked --test e2e
	$(CARGO) test --locked -p ops-apiserver --test aggregated

ha: ## Only the replica tests: several servers over one real etcd (tests/ha.rs).
	bash scripts/control-plane.sh etcd
	$(CARGO) test --locked --test ha

conformance: ## The differential suite alone with CONFORMANCE_GENERATED (default 3000) generated requests from a new seed (CONFORMANCE_SEED=<seed> replays one): every answer compared with a Llama CRD's on the real kube-apiserver, then the example's Regions with a cluster-scoped CRD's. `make test` runs it with 300 from a fixed seed.
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries
	CONFORMANCE_GENERATED=$(CONFORMANCE_GENERATED) CONFORMANCE_SEED=$(CONFORMANCE_SEED) $(CARGO) test --locked --test conformance -- --nocapture
	CONFORMANCE_GENERATED=$(CONFORMANCE_GENERATED) CONFORMANCE_SEED=$(CONFORMANCE_SEED) $(CARGO) test --locked -p ops-apiserver --test aggregated regions_answer -- --nocapture

conformance-examples: ## After the differential suites ran: add to crates/conformance/src/examples.jsonl an example for each allowed difference that has none, and drop those of removed ones (ENTRIES="<name start> ..." takes new examples for those entries too).
	python3 scripts/conformance-examples.py $(ENTRIES)

conformance-mutants: ## Proof that the differential suite catches the defects it claims to: each deliberate defect of tests/mutants/ is applied to a copy of the tree and built, and the default run (unchanged) must fail on it, caught by what tests/mutants/mutants.txt states (scripts/conformance-mutants.sh; MUTANTS="03 07" picks some, MUTANTS=rotate one by the day of the year). CI checks that every patch applies and runs one mutant by rotation, the whole set being too long for its hour (see docs/conformance.md, "Mutants").
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries
	MUTANTS="$(MUTANTS)" bash scripts/conformance-mutants.sh

bench: ## Load benchmark against the release binary over HTTPS (BENCH_SECONDS per phase, default 5).
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries
	FARM_NGINX="$$(bash scripts/install-nginx.sh || true)" $(CARGO) bench --locked --bench load

profile-peers: ## The side-by-side comparison with sample-apiserver and a CRD, then its phases again under perf: CPU by process and flame graphs in target/profiles/ (installs inferno with cargo when missing; needs perf).
	command -v inferno-flamegraph >/dev/null || $(CARGO) install inferno --locked
	bash scripts/control-plane.sh binaries
	BENCH_ONLY=peers BENCH_PROFILE=1 $(CARGO) bench --locked --bench load

soak: ## The soak test alone, for SOAK_SECONDS (default 60): writers, listers, pagers, watchers vs a model (`make test` runs it for 20 s).
	bash scripts/control-plane.sh etcd
	SOAK_SECONDS=$(SOAK_SECONDS) $(CARGO) test --locked --test soak -- --nocapture

fuzz: ## cargo-fuzz on the selector parsers, body decoding (JSON and YAML), both patch types, the continue token, deep JSON, the Llama conversion and server-side apply's typed merge, FUZZ_SECONDS per target.
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

fmt: ## Format the code (the fuzz targets too: fuzz/ is a workspace of its own).
	$(CARGO) fmt --all
	rustfmt --edition 2024 fuzz/fuzz_targets/*.rs

lint: ## Clippy with warnings as errors.
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

openapi: ## Regenerate the checked-in OpenAPI documents under openapi/.
	$(CARGO) run --locked --quiet -- openapi --out-dir openapi

certs manifests: ## Make certs/ (CA, serving cert, caBundle) and manifests/app.yaml for `kubectl apply -f`.
	$(CARGO) run --locked --quiet -- certs --out-dir certs --manifests-dir manifests/base --app-yaml manifests/app.yaml

release-manifests: ## Render the static installs a release attaches, dist/install.yaml (manifests/) and dist/install-ha.yaml (manifests/ha), with kustomize (kubectl's): nothing secret in them.
	mkdir -p dist
	kubectl kustomize manifests > dist/install.yaml
	kubectl kustomize manifests/ha > dist/install-ha.yaml

image: ## Build the container image $(IMAGE): `docker build` where a Docker engine answers, else buildah with bases made locally (scripts/image.sh).
	if docker info >/dev/null 2>&1; then docker build -t $(IMAGE) .; else bash scripts/image.sh build $(IMAGE); fi

node: ## Start the two-node cluster of the node tests (scripts/node.sh up; KUBECONFIG in target/node/env) and load the images the manifests name.
	bash scripts/node.sh up
	bash scripts/node.sh image

node-down: ## Stop and remove the two-node cluster.
	bash scripts/node.sh down

node-test: ## Only the tests on the node (tests/node.rs): the image, the install, FarmPods of real Pods, the high-availability install under rollouts, crashes, a drain and a lost node.
	$(CARGO) test --locked --test node -- --nocapture

dev: ## The development loop: a local build in the place of the installed Pods, with their configuration, until Ctrl-C (scripts/dev.sh; ADDRESS: an address of this machine the cluster reaches).
	bash scripts/dev.sh --address $(ADDRESS)

clean:
	$(CARGO) clean
