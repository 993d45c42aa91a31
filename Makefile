# farm-apiserver: common tasks. `make test` is what CI runs (.ci/run).

PORT ?= 8443
KUBECONFIG_OUT ?= ./farm.kubeconfig
CARGO ?= cargo

.PHONY: build run test unit fmt lint openapi clean

build: ## Build the server (debug).
	$(CARGO) build --locked

run: ## Run standalone on 127.0.0.1:$(PORT), writing a kubeconfig for kubectl.
	$(CARGO) run --locked -- serve --standalone --bind-address 127.0.0.1 --secure-port $(PORT) --write-kubeconfig $(KUBECONFIG_OUT)

test: ## Everything CI checks: formatting, lints, unit and black-box tests (kubectl included).
	bash scripts/install-tools.sh
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	$(CARGO) test --locked --all-targets

unit: ## Unit tests only.
	$(CARGO) test --locked --lib

fmt: ## Format the code.
	$(CARGO) fmt

lint: ## Clippy with warnings as errors.
	$(CARGO) clippy --locked --all-targets -- -D warnings

openapi: ## Regenerate the checked-in OpenAPI documents under openapi/.
	$(CARGO) run --locked --quiet -- openapi --out-dir openapi

clean:
	$(CARGO) clean
