# headgate: every target loops over the modules of the go.work workspace.
MODULES := $(patsubst %/go.mod,%,$(wildcard */go.mod))
GO      ?= go
FUZZTIME ?= 20s
BENCHTIME ?= 1s

.PHONY: help test core-deps vet lint fuzz bench matrix bench-modules demo demo-svg tidy-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

test: core-deps ## go test -race in every module (packages one at a time: the integration tests measure real time)
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) test -race -count=1 -p 1 ./...); done

core-deps: ## fail if core requires any module: it is standard library only
	@deps=$$(cd core && GOWORK=off $(GO) list -m all); if [ "$$deps" != "github.com/headgate-go/headgate/core" ]; then 	  echo "core must require nothing, but lists:"; echo "$$deps"; exit 1; fi

vet: ## go vet in every module
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

lint: vet ## gofmt, go vet, and staticcheck when installed
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then set -e; for m in $(MODULES); do (cd $$m && staticcheck ./...); done; \
	 else echo "staticcheck not installed: skipped (go install honnef.co/go/tools/cmd/staticcheck@latest)"; fi

fuzz: ## run every fuzz target for FUZZTIME (default 20s each)
	@set -e; for m in $(MODULES); do \
	  for pkg in $$(cd $$m && $(GO) list ./...); do \
	    for f in $$(cd $$m && $(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz'); do \
	      echo "== $$pkg $$f"; (cd $$m && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg); \
	    done; done; done

bench: ## side-by-side benchmarks (5 rounds, 2-4 min) and the feedback matrix (about 15 min): bench/results/ and the README tables
	cd bench && $(GO) run ./cmd/report -readme ../README.md
	cd bench && $(GO) run ./cmd/matrix -readme ../README.md

matrix: ## the feedback matrix alone (about 15 min; MATRIX=-quick for a one-minute subset): bench/results/matrix.* and the README table
	cd bench && $(GO) run ./cmd/matrix -readme ../README.md $(MATRIX)

bench-modules: ## quick go test -bench in every module, nothing written
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...); done

demo: ## 600 calls through 8 clients against a local rate-limited server (about a minute, loopback only)
	cd examples && $(GO) run ./demo

demo-svg: ## regenerate docs/headgate-demo.svg, the README's picture
	cd examples && $(GO) run ./demo -svg ../docs/headgate-demo.svg

tidy-check: ## fail if any go.mod or go.sum is not tidy
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go mod tidy would change go.mod/go.sum"; exit 1; }; done
