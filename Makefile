# headgate: every target loops over the modules of the go.work workspace.
MODULES := $(patsubst %/go.mod,%,$(wildcard */go.mod))
GO      ?= go
FUZZTIME ?= 20s
SMOKETIME ?= 3s
BENCHTIME ?= 1s
# The modules a release publishes (tags core/v0.1.0, resty/v0.1.0, ...); examples, bench
# and release are not published.
LIBRARY := core resty retryablehttp gokit redisstore telemetry
RELEASE_VERSION ?= v0.1.0
# staticcheck at a pinned version (2026.2.2), installed into .bin by make lint.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/.bin/staticcheck

.PHONY: help ci test core-deps vet lint staticcheck fuzz fuzz-smoke bench matrix matrix-wants family summary bench-modules demo demo-svg tidy-check release-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# make test runs every package of every module with -race, in three steps (.ci/gotest):
#   1. build every test binary once (go test -c, vet included as go test runs it), as many
#      at once as there are CPUs;
#   2. the tests that take no bound from the wall clock (virtual time, testing/synctest, or
#      no time at all), as many binaries at once as there are CPUs: the tests VIRTUAL lists
#      of the packages that also have real-time tests, then the packages CONCURRENT lists;
#   3. every other test, one binary at a time: their real-time tests (loopback with
#      wall-clock bounds, redisstore's redis-server, bench/matrix's real limiters) must
#      not compete for the CPUs.
# Steps 2 and 3 run side by side, step 2 at the idle scheduling priority (SCHED_IDLE,
# chrt -i 0): its binaries get only a CPU no other task wants, and lose it the moment a
# step-3 thread wakes, so the real-time tests compete with nothing of make test's. Where
# chrt cannot set that priority (macOS), or with SERIAL=1, step 2 runs before step 3.
# A test runs in step 3 unless CONCURRENT lists its package or VIRTUAL lists it: one with
# a real-time bound goes nowhere else. Each test runs once: a VIRTUAL test in step 2
# (-test.run), its package's others in step 3 (-test.skip).
CONCURRENT := ./core/internal/... ./core/ratelimit/... ./bench/cmd/matrix/... ./bench/internal/... \
  ./examples/... ./release/... ./sdks/...
# VIRTUAL: PACKAGE:TEST[,TEST...], TEST a top-level test's exact name (.ci/gotest fails on
# one that does not exist); each entry is one run of the package's binary, the longest
# first. A Go process under -race keeps fewer CPUs busy than its parallel tests ask for
# (TestFamily's 200 parallel draws: 1.35 of 2), so the long ones run apart.
COMMA := ,
SPACE := $(subst ,, )
VIRTUAL := \
  ./bench/matrix:TestSlidingAtPhase \
  ./bench/matrix:TestFamily,TestFamilyWants \
  ./bench/matrix:TestWantsInVirtualTime,TestWantsAtUnluckyPhases \
  ./bench/matrix:TestSlidingFloor \
  ./core:TestRandomReportsNeverBeatTheConfiguredRate \
  ./core:$(subst $(SPACE),$(COMMA),$(strip TestHostileHeadersBoundedStall \
    TestBatchConfiguredExactRate TestBatchConfiguredExactRateFirstBurstShortOfAToken \
    TestBatchConfiguredExactRateFirstPacedCallOvertakesTheBurst TestBatchConfiguredExactRateNearMissAtTheStart \
    TestBatchConfiguredExactRateStalled TestBatchConfiguredTwiceTheRate TestBatchLearnedRate \
    TestBatchServerPause TestBatchServerPauseNearMissAfterIt TestBatchServerPauseNearMissAfterItRetryAfterOnly \
    TestBatchFixedWindowPauseResetRoundedDown TestBatchFixedWindowPauseEndsLateInItsSecond \
    TestBatchSlidingWindowConfiguredExactRate TestBatchSlidingWindowConfiguredTwiceTheRate \
    TestBatchSlidingWindowRetryAfterWindowConfiguredTwiceTheRate TestBatchSlidingWindowPause \
    TestStoreBatchConfiguredExactRate TestStoreBatchConfiguredTwiceTheRate)) \
  ./bench/matrix:TestSlidingWindowBound \
  ./bench/matrix:TestFiberFixedTurnInTheFirstBurst,TestFiberSlidingInVirtualTime,TestHttprateOffTheSecond
# TIMEOUT, each test binary's -test.timeout: go test's default of 10 minutes a package is
# no hang guard for bench/matrix under -race on a busy 2-CPU machine (it took 589 s before
# its cells ran in parallel, and hit the 10 minutes beside another make test).
TIMEOUT := 30m

test: core-deps ## go test -race in every package: built once, virtual-time tests at idle priority, real-time ones alone
	@GO=$(GO) TIMEOUT=$(TIMEOUT) SERIAL=$(SERIAL) CONCURRENT="$(CONCURRENT)" VIRTUAL="$(VIRTUAL)" \
	  .ci/gotest $(MODULES:%=./%/...)

core-deps: ## fail if core requires any module: it is standard library only
	@deps=$$(cd core && GOWORK=off $(GO) list -m all); if [ "$$deps" != "github.com/headgate-go/headgate/core" ]; then 	  echo "core must require nothing, but lists:"; echo "$$deps"; exit 1; fi

vet: ## go vet in every module
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

ci: lint tidy-check release-check fuzz-smoke test ## what .ci/run and the GitHub workflow run

lint: vet staticcheck ## gofmt, go vet and staticcheck (installed at a pinned version); fails on any finding
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do (cd $$m && $(STATICCHECK) ./...); done

staticcheck: ## install the pinned staticcheck (STATICCHECK_VERSION) into .bin unless it is there
	@$(STATICCHECK) -version 2>/dev/null | grep -q '($(STATICCHECK_VERSION:v%=%))' || \
	  GOBIN=$(CURDIR)/.bin GOWORK=off $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fuzz: ## run every fuzz target for FUZZTIME (default 20s each; .ci/fuzz-target)
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' $(MODULES) | grep -v /testdata/); do \
	  dir=$$(dirname $$f); \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$dir $$t"; .ci/fuzz-target $$dir $$t $(FUZZTIME); \
	  done; done

fuzz-smoke: ## every fuzz target for SMOKETIME (default 3s each), as CI runs them
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(SMOKETIME)

release-check: ## pack the library modules at RELEASE_VERSION into a file:// proxy, go get and build them outside the workspace
	cd release && $(GO) run . check -version $(RELEASE_VERSION) $(LIBRARY)

bench: ## the benchmarks (5 rounds, 3-5 min) and the feedback matrix (about 20 min): bench/results/, docs/BENCHMARKS.md, the README's summary
	cd bench && $(GO) run ./cmd/report -doc ../docs/BENCHMARKS.md
	cd bench && $(GO) run ./cmd/matrix -doc ../docs/BENCHMARKS.md
	@$(MAKE) --no-print-directory summary

matrix: ## the feedback matrix alone (about 20 min; MATRIX=-quick for a one-minute subset): bench/results/matrix.*, docs/BENCHMARKS.md, the README's summary
	cd bench && $(GO) run ./cmd/matrix -doc ../docs/BENCHMARKS.md $(MATRIX)
	@$(MAKE) --no-print-directory summary

matrix-wants: ## the regression cells judged by issue 14's wants in virtual time (make test logs their misses; the configured bound fails either way)
	cd bench && $(GO) test -count=1 ./matrix -args -matrix.wants

family: ## the randomized server family (FAMILY=N draws, default 1000; SEED=S replays): its distribution in docs/BENCHMARKS.md, then issue 30's wants judged on 200 draws
	cd bench && $(GO) run ./cmd/matrix -family $(or $(FAMILY),1000) $(if $(SEED),-seed $(SEED)) -out results/family.json -doc ../docs/BENCHMARKS.md
	cd bench && $(GO) test -count=1 -run 'TestFamilyWants$$' ./matrix -args -family.wants $(if $(SEED),-family.seed=$(SEED))

summary: ## the README's summary table from the committed bench/results/ (no run: seconds)
	cd bench && $(GO) run ./cmd/report -from results/latest.txt -md "" -doc ../docs/BENCHMARKS.md -summary ../README.md

bench-modules: ## quick go test -bench in every module, nothing written
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...); done

demo: ## 600 calls through 8 clients against a local rate-limited server (about a minute, loopback only)
	cd examples && $(GO) run ./demo

demo-svg: ## regenerate docs/headgate-demo.svg, the README's picture
	cd examples && $(GO) run ./demo -svg ../docs/headgate-demo.svg

tidy-check: ## fail if any go.mod or go.sum is not tidy
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go mod tidy would change go.mod/go.sum"; exit 1; }; done
