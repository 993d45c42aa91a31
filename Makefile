# farm-apiserver: common tasks. `make test` is what CI runs (.ci/run).

PORT ?= 8443
KUBECONFIG_OUT ?= ./farm.kubeconfig
IMAGE ?= farm-apiserver:0.1.0
CARGO ?= cargo

SOAK_SECONDS ?= 60
FUZZ_SECONDS ?= 15

.PHONY: build run test unit e2e ha bench soak fuzz fmt lint openapi certs manifests image clean

build: ## Build the server (debug).
	bash scripts/install-tools.sh build
	$(CARGO) build --locked

run: ## Run standalone on 127.0.0.1:$(PORT), writing a kubeconfig for kubectl.
	bash scripts/install-tools.sh build
	$(CARGO) run --locked -- serve --standalone --bind-address 127.0.0.1 --secure-port $(PORT) --write-kubeconfig $(KUBECONFIG_OUT)

test: ## Everything CI checks: formatting, lints, unit, black-box, kubectl and real-control-plane tests.
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries >/dev/null
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	$(CARGO) test --locked --lib --bins --tests

unit: ## Unit tests only.
	bash scripts/install-tools.sh build
	$(CARGO) test --locked --lib

e2e: ## Only the tests against a real etcd + kube-apiserver (KUBE_APISERVER / ETCD to bring your own).
	bash scripts/install-tools.sh
	bash scripts/control-plane.sh binaries >/dev/null
	$(CARGO) test --locked --test e2e

ha: ## Only the replica tests: several servers over one real etcd (tests/ha.rs).
	bash scripts/install-tools.sh build
	bash scripts/control-plane.sh binaries >/dev/null
	$(CARGO) test --locked --test ha

bench: ## Load benchmark against the release binary over HTTPS (BENCH_SECONDS per phase, default 5).
	bash scripts/install-tools.sh build
	bash scripts/control-plane.sh binaries >/dev/null
	$(CARGO) bench --locked --bench load

soak: ## The soak test alone, for SOAK_SECONDS (default 60): writers, listers, pagers, watchers vs a model (`make test` runs it for 20 s).
	bash scripts/install-tools.sh build
	SOAK_SECONDS=$(SOAK_SECONDS) $(CARGO) test --locked --test soak -- --nocapture

fuzz: ## cargo-fuzz on the selector parsers, body decoding, both patch types and the continue token, FUZZ_SECONDS per target.
	bash scripts/install-tools.sh build
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

fmt: ## Format the code.
	$(CARGO) fmt

lint: ## Clippy with warnings as errors.
	bash scripts/install-tools.sh build
	$(CARGO) clippy --locked --all-targets -- -D warnings

openapi: ## Regenerate the checked-in OpenAPI documents under openapi/.
	bash scripts/install-tools.sh build
	$(CARGO) run --locked --quiet -- openapi --out-dir openapi

certs manifests: ## Make certs/ (CA, serving cert, caBundle) and manifests/app.yaml for `kubectl apply -f`.
	bash scripts/install-tools.sh build
	$(CARGO) run --locked --quiet -- certs --out-dir certs --manifests-dir manifests --app-yaml manifests/app.yaml

image: ## Build the container image $(IMAGE) (needs a Docker engine).
	docker build -t $(IMAGE) .

clean:
	$(CARGO) clean
