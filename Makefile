# mcp-runtime: build and test entry points. `make test` is the full gate that
# CI runs (.ci/run); it installs the tools it needs (scripts/install-tools.sh,
# into the git-ignored .cache/).
#
# bench/ is a separate Go module (its own go.mod), so `./...` here does not
# include it; `make vet` still checks its formatting.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# The targets share .cache/ and 2 cores; run them one at a time even under -j.
.NOTPARALLEL:

GO       ?= go
FUZZTIME ?= 10s
# A local go.work (git-ignored) would pull bench/ into ./...: keep the module view.
export GOWORK := off

ROOT        := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
STATICCHECK := $(ROOT)/.cache/bin/staticcheck
# Helm and the Kubernetes version it renders for: both pinned in scripts/lib.sh.
HELM         := $(ROOT)/.cache/bin/helm
KUBE_VERSION := $(shell source $(ROOT)/scripts/lib.sh && echo "$$HELM_KUBE_VERSION")
CHART        := helm/mcp-runtime
# Every .go file in the repository, bench/ included; tool caches excluded.
GO_FILES_CMD := find . \( -path ./.git -o -path ./.cache -o -name node_modules -o -name vendor \) -prune -o -type f -name '*.go' -print

.PHONY: help test vet lint helm test-go fuzz-short conformance fidelity ts-client run bench tools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{ printf "  %-12s %s\n", $$1, $$2 }'

# helm comes before test-go: test/deploy renders the chart with the helm it installs.
test: vet lint helm test-go fuzz-short conformance fidelity ts-client ## the full gate: vet, lint, helm, test-go, fuzz-short, conformance, fidelity, ts-client

vet: ## gofmt -l must list nothing (bench/ too), then go vet ./...
	@echo "==> gofmt -l"
	@unformatted="$$($(GO_FILES_CMD) | xargs -r gofmt -l)"; \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted" | sed 's/^/  /'; \
		exit 1; \
	fi
	$(GO) vet ./...

lint: ## staticcheck ./... (installs the pinned staticcheck if needed)
	@scripts/install-tools.sh go
	$(STATICCHECK) ./...

helm: ## helm lint --strict, then helm template, of the chart with its default and its production values
	@scripts/install-tools.sh helm
	$(HELM) lint --strict --kube-version $(KUBE_VERSION) $(CHART)
	$(HELM) lint --strict --kube-version $(KUBE_VERSION) -f $(CHART)/ci/production-values.yaml $(CHART)
	@# lint reports a template's `fail` only as [INFO]; rendering makes it an error.
	@out="$$(mktemp -d)"; trap 'rm -rf "$$out"' EXIT; \
	for values in values.yaml ci/production-values.yaml; do \
		name="$$(basename "$$values" .yaml)"; \
		echo "$(HELM) template mcp-runtime $(CHART) --kube-version $(KUBE_VERSION) -f $(CHART)/$$values"; \
		$(HELM) template mcp-runtime $(CHART) --kube-version $(KUBE_VERSION) -f "$(CHART)/$$values" >"$$out/$$name.yaml"; \
		echo "    $$(grep -c '^kind: ' "$$out/$$name.yaml") objects: $$(grep '^kind: ' "$$out/$$name.yaml" | cut -d' ' -f2 | sort | paste -sd' ')"; \
	done

# The Redis Cluster tests run against a cluster of six nodes on loopback
# (scripts/redis-cluster.sh), started for the run and stopped after it.
test-go: ## go test -race -count=1 ./... (with a local Redis Cluster for the cluster tests)
	@scripts/redis-cluster.sh start
	@trap 'scripts/redis-cluster.sh stop' EXIT; \
	MCP_TEST_REDIS_CLUSTER="$$(scripts/redis-cluster.sh url)" $(GO) test -race -count=1 ./...

fuzz-short: ## every FuzzXxx for FUZZTIME (default 10s), found by go test -list
	@FUZZTIME='$(FUZZTIME)' scripts/fuzz-short.sh

conformance: ## MCP conformance suite against test/conformance and cmd/api
	@scripts/install-tools.sh node
	@scripts/conformance.sh

fidelity: ## server-everything called directly and through cmd/api by the TypeScript client: the same answers
	@scripts/install-tools.sh node
	@scripts/fidelity.sh

ts-client: ## cmd/api through the TypeScript client of 2026-07-28, pinned to the modern era, in auto and in legacy mode
	@scripts/install-tools.sh node
	@scripts/ts-client.sh

run: ## run the server (go run ./cmd/api)
	$(GO) run ./cmd/api

bench: ## go benchmarks of the main module
	$(GO) test -run '^$$' -bench . -benchmem ./...

tools: ## install the pinned tools into .cache/
	@scripts/install-tools.sh
