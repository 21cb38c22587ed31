GO ?= go
PROTOC ?= protoc
GOBIN ?= $(shell $(GO) env GOPATH)/bin

.PHONY: shrink-table all test test-mutant-builds test-cover-builds cover docs-check docs-pictures test-race bench proto proto-tools lint run sweep guided probes mutants integration report report-short golden-update real fuzz explore shrunk-stories timeline-picture

all: lint test

## run: the main job, a simulation run on the embedded default
run:
	$(GO) run ./cmd/relaysim run -seed 0x2a -mode bulk

## test: the README's test command (what CI runs)
test:
	$(GO) test ./...

## test-mutant-builds: the cmd/relaysim tests that build the runner with a
## catalog mutant (skipped by default: each build is 20-90 s; CI runs them)
test-mutant-builds:
	$(GO) test ./cmd/relaysim -count=1 -timeout 30m -mutant-builds=true -run '$(MUTANT_BUILD_TESTS)'

## docs-pictures: regenerate docs/*.png from the code that draws them and
## record that code's hash in docs/pictures.txt (the report at full length:
## about 30 minutes on a busy 2-core machine; the timeline needs chromium)
docs-pictures:
	$(GO) test -count=1 -timeout 90m -run TestDocPicturesAreFresh -docs.pictures=true .

## docs-check: run every command README.md and docs/*.md tell a user to
## paste (but the long ones) and check exit codes and shown outputs
docs-check:
	$(GO) test -count=1 -timeout 30m -run 'TestDocCommands|TestReadmeMainJob' -docs.run=true .

## test-cover-builds: the cmd/relaysim tests that build the runner with
## coverage and run -cover commands (skipped by default; CI runs them)
test-cover-builds:
	$(GO) test ./cmd/relaysim -count=1 -timeout 30m -cover-builds=true -run 'TestCoverBuilds'

## cover: the CI cover sweep (.ci/cover, docs/coverage.md): six sweeps
## merged, failing under 95% of the statements not set aside; the cover:
## line, and out/cover/{cover.out,uncovered.txt,cover.html}
cover:
	mkdir -p out
	.ci/cover out/cover

MUTANT_BUILD_TESTS = TestExploreBannerUnderAMutant|TestLeftoverGoroutinesKeepTheRunsFiles|TestMutantFlagRunsTheMutant|TestReplayStoryUnderAMutant|TestShrinkACatalogMutant|TestShrinkEquivWritesATwoModeStory|TestShrinkIsolatedGoroutineLeak

test-race:
	$(GO) test -race ./...

## integration: three relayd processes against a real redis-server, both
## modes (skips when redis-server is not installed)
integration:
	$(GO) test -count=1 -run Integration -v ./cmd/relayd/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

proto-tools:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

proto:
	PATH="$(GOBIN):$$PATH" $(PROTOC) -I system/relaypb \
		--go_out=system/relaypb --go_opt=paths=source_relative \
		--go-grpc_out=system/relaypb --go-grpc_opt=paths=source_relative \
		system/relaypb/relay.proto

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

## mutants: run the bug catalog (mutants/catalog); each mutant must be caught
## by the property it names, and a caught mutant's replay command must fail
## again with the same trace hash. MUTANTS_FLAGS=-rotate=1/2 runs a part.
MUTANTS_FLAGS ?=
mutants:
	$(GO) run ./cmd/relaysim mutants $(MUTANTS_FLAGS)
	$(GO) test ./mutants -run TestReplayCommand -mutants.replay=gap-not-filled -count=1 -v -timeout 15m

## explore: the model checker's long checks and measurements: every story
## pinned report (the slow ones too: -explore.slow), every story's
## search naive vs reduced at its pinned bound and bounds 0-2, and with a crash budget (each capped
## at EXPLORE_CAP of CPU time: the pinned stories' reduced searches each take
## under 60 s), the long soundness comparison (every story
## naive vs reduced at bounds 0-2; a naive search past 20,000 schedules is
## skipped, and says so), and a
## commutation check of 40 op pairs per story and mode with a fresh seed.
## The six original stories' naive searches at their pinned bound run up to
## EXPLORE_NAIVE_CAP, so that their reduction shows at equal terminal states
## (crash-during-fanout stream took 24 min of CPU; two-senders single and
## stream do not finish in 55 min, and say so): those naive searches take
## about 2 hours of CPU in all (BENCHMARKS.md, measured one by one).
## The table lands in out/explore-bench.md (BENCHMARKS.md quotes it).
EXPLORE_CAP ?= 60s
EXPLORE_NAIVE_CAP ?= 30m
explore:
	mkdir -p out
	$(GO) test ./scenarios -count=1 -timeout 30m -run 'TestScenarios/explore-' -explore.slow
	$(GO) test ./scenarios -count=1 -timeout 8h -run 'TestExploreBench' -v -explore.bench=$(CURDIR)/out/explore-bench.md -explore.cap=$(EXPLORE_CAP) -explore.naive-cap=$(EXPLORE_NAIVE_CAP) -explore.bounds=0,1,2
	$(GO) test ./scenarios -count=1 -timeout 3h -run 'TestExploreReducedMatchesNaive|TestExploreCommutes' -explore.long -explore.commute-pairs=40 -explore.commute-seed=$$(date +%s)
	$(GO) test ./sim/dst -count=1 -run 'TestExplore(Bound|Timers|EarlyTimers)?SoundOnRandomPrograms' -rapid.checks=2000

## probes: CI's upgrade sweep with the code probes it must reach
## (.ci/required-probes, docs/probes.md): each probe's count of runs that
## hit it, the ones never hit, and exit 1 if a required one went unhit
probes:
	$(GO) run ./cmd/relaysim sweep -seeds 1-20 -mode stream -upgrade v1:v3 -equiv=false -j 2 -require-probes "$$(tr -s ' \n' ',' < .ci/required-probes | sed 's/^,//; s/,$$//')"

## guided: a sweep steered toward the probes plain sweeps never reach
## (docs/guided.md): GUIDED_RUNS runs in stream mode, resuming from and
## growing the corpus in out/guided (GUIDED_FLAGS=-seed 2 for another search)
GUIDED_RUNS ?= 300
GUIDED_FLAGS ?=
guided:
	mkdir -p out
	$(GO) run ./cmd/relaysim guide -corpus out/guided -runs $(GUIDED_RUNS) -mode stream $(GUIDED_FLAGS)

## sweep: the issue's 400-run sweep
sweep:
	$(GO) run ./cmd/relaysim sweep -seeds 1-200 -mode both

## report: the seeds' experiments at full length (120 s load + 60 s drain per
## condition, both modes; tens of minutes on 2 cores), tables and charts in out/
report:
	$(GO) run ./cmd/relaysim report all -plot out/

## report-short: the same with 6 s of load and 10 s of drain (a few minutes)
report-short:
	$(GO) run ./cmd/relaysim report all -load 6s -drain 10s -messages 5 -plot out/

## golden-update: rewrite golden/testdata (then review the diff)
golden-update:
	$(GO) test ./golden -update -count=1

## real: the relay for real under a nemesis (relayd processes, redis-server,
## SIGKILL/SIGSTOP/SIGTERM, Redis restarts, link faults), judged by the
## model's checks; docs/real-cluster.md. REAL_FLAGS=-mutant NAME builds
## relayd with a catalog mutant.
REAL_FLAGS ?= -seed 0x2a -duration 60s
real:
	$(GO) run ./cmd/relaysim real $(REAL_FLAGS)

## fuzz: every fuzz target for FUZZTIME each (one at a time; crashes land
## in the package's testdata/fuzz/). FUZZ_ONLY=regexp picks targets.
FUZZTIME ?= 1m
FUZZ_ONLY ?= .
fuzz:
	.ci/fuzz $(FUZZTIME) '$(FUZZ_ONLY)'

## shrink-table: shrink sweep-caught catalog mutants under their overlays
## (mutants/shrink-table.sh) and print BENCHMARKS.md's "Shrinking (issue 20)"
## table. SHRINK_MUTANTS names them; SHRINK_BUDGET bounds each shrink.
SHRINK_MUTANTS ?= gap-not-filled catch-up-redelivers-last no-dedup executor-max-off-by-one idempotency-key-ignored keepalive-never-retires stream-writer-not-woken stream-link-seq-per-stream task-panic-nil-map relay-deadline-too-short
shrink-table:
	mkdir -p out
	SHRINK_BUDGET=$(SHRINK_BUDGET) sh mutants/shrink-table.sh $(SHRINK_MUTANTS) | tee out/shrink-table.md
SHRINK_BUDGET ?= 3m

## shrunk-stories: each shrunk real failure in scenarios/testdata/shrunk/bugN-*
## passes on main and fails on its property with its bug (the catalog
## mutant) put back
shrunk-stories:
	sh mutants/shrunk-stories.sh

## timeline-picture: docs/timeline.png again, the timeline browser test's
## screenshot (1400x900) of a real run's page; needs chromium (without it the
## test skips and the picture stays as it was)
timeline-picture:
	$(GO) test ./timeline -count=1 -run 'TestTimelineInBrowser$$' -timeline.screenshot=$(CURDIR)/docs/timeline.png
