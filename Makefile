# The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test bench bench-hosts setup ui app lint rust-test ui-test e2e e2e-web clean-demo types fuzz fuzz-smoke dist dist-test chaos

## Install what is missing, build, seed a demo fleet on first start, open the window.
run: setup app
	scripts/run-app.sh

## Everything CI checks: format, lints (and no import circle between the files of a crate),
## Rust tests, UI checks and tests, real-window e2e,
## and a short run of every fuzz target.
test: setup lint rust-test ui-test e2e e2e-web fuzz-smoke

## Benchmarks on release builds that print their figures (audit appends vs a bare loop,
## `audit verify` of a million records vs one signature at a time on one core, decision latency, opening/listing/deciding a gate with 10 vs 2,000 asks pending (ratio),
## tool-call permission round trips with 1/10/50 demo agents (all starting
## at once, and a started fleet each asking about every 100 ms), engine CPU
## while agents wait, starting a run's repository from a 20,000-file repository (clone
## --shared vs its own copy of the base's history), and in the real window: dashboard cold start, reload and filter with
## 10,000 runs vs 100, a blocking question's time to its row and to the Notify call, and
## the idle PSS of the whole process tree beside WebKit's own floor; the engine's `runs()` while a
## run forks 3,000 children and spins 32 busy loops, without and with the run limits), one engine
## carrying 1,000 runs each waiting on a gate (a contained process per run, scripted session: the
## engine's RSS and CPU per run, decision commit p99, event to a socket client, the fleet's reload
## with 1,000 live runs; OVERSEER_BENCH_RUNS=N for fewer), and in a real headless Chromium
## against `overseer serve --web` (tests/e2e/web/bench.sh): a demo agent's tool call decided by
## a tap on the phone page's Yes to the agent holding its answer, p50/p99, vs the same decided by
## a socket client (ratio), the phone inbox's first paint and first card painted with the CPU
## throttled 4x vs 1x, and the engine's RSS/PSS per connected browser (WebSocket), then merge
## every figure into target/bench/summary.json (scripts/bench-summary.mjs).
bench: setup ui
	$(CARGO) build --release -p overseer-app -p overseer-cli -p overseer-demo-agent
	mkdir -p target/bench && rm -f target/bench/*.json
	$(CARGO) bench -p overseer-store --bench audit
	$(CARGO) bench -p overseer-engine --bench permission
	$(CARGO) bench -p overseer-engine --bench hostile_load
	$(CARGO) bench -p overseer-engine --bench pending
	$(CARGO) bench -p overseer-engine --bench run_repo
	$(CARGO) bench -p overseer-engine --bench capacity
	BENCH_PROFILE=release tests/e2e/bench/run.sh
	BENCH_PROFILE=release tests/e2e/web/bench.sh
	node scripts/bench-summary.mjs

## A decision's round trip to an agent on a host over real OpenSSH (a test host: an sshd in
## its own network namespace, needs root), from `overseer --host NAME gates decide` to the
## demo agent there holding the answer, direct and with 50 ms added to every byte going to the
## host; p50/p99 over OVERSEER_BENCH_DECISIONS (20) decisions each, and a bare `ssh host true`
## beside them; written to target/bench/hosts.json (crates/overseer-cli/tests/host_bench.rs).
## Then the window with 5 test hosts x 50 runs against 250 runs on this machine: reload to
## every run counted, and a change to its row (tests/e2e/bench/hosts.bench.mjs).
bench-hosts: setup ui
	$(CARGO) build --release -p overseer-app -p overseer-cli -p overseer-demo-agent -p overseer-test-support
	$(CARGO) test --release -p overseer-cli --test host_bench
	tests/e2e/bench/run.sh hosts.bench.mjs

setup:
	scripts/setup.sh

## Regenerate what is generated from the contract (crates/overseer-api) and checked in:
## ui/src/lib/generated/{types,client}.ts (ts-rs), src-tauri/capabilities/main.json, and the
## mock backend's demo data recorded from the real engine (ui/src/lib/backend/fixtures.json).
types:
	OVERSEER_WRITE_TYPES=1 $(CARGO) test -p overseer-server --test contract
	OVERSEER_WRITE_TYPES=1 $(CARGO) test -p overseer-engine --test engine ui_fixtures::

ui:
	cd ui && npm run build

## The desktop app (UI embedded) and the CLI.
# The second line builds the same set as BINARIES in crates/overseer-test-support,
# so the tests' build and this one share their artifacts.
app: ui
	$(CARGO) build -p overseer-app
	$(CARGO) build -p overseer-cli -p overseer-demo-agent -p overseer-test-support

lint: ui
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/import-circles.py --self-test && python3 scripts/import-circles.py .
	cd ui && npm run check

rust-test: ui
	$(CARGO) test --workspace

ui-test:
	cd ui && npm test

e2e: app
	tests/e2e/run.sh

## The browser tests: a real `overseer serve --web` with the demo agent, and a
## real headless Chromium with a phone's viewport over chromedriver.
e2e-web: app
	tests/e2e/web/run.sh

## Fuzzing (fuzz/README.md): every cargo-fuzz target in turn, one process at a time.
## `make fuzz` is the long campaign (FUZZ_SECONDS per target), `make fuzz-smoke` the
## short run `make test` does (FUZZ_SMOKE_SECONDS per target).
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 15

fuzz: setup
	scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz-smoke: setup
	scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)

## The crash campaign (crates/overseer-cli/tests/cli/chaos.rs): `overseer serve` killed with
## SIGKILL at random points (before, during, after a decision; during a merge; while agents
## work), decisions made offline, the engine restarted, CHAOS_ITERATIONS times; prints lost /
## changed / doubled decisions, audit failures, stuck runs and orphaned processes, all 0.
## `make test` runs a short one (12 iterations). CHAOS_SEED=... replays a campaign's choices.
CHAOS_ITERATIONS ?= 1000

chaos:
	OVERSEER_CHAOS_ITERATIONS=$(CHAOS_ITERATIONS) $(if $(CHAOS_SEED),OVERSEER_CHAOS_SEED=$(CHAOS_SEED)) \
		$(CARGO) test -p overseer-cli --test cli chaos:: -- --nocapture

## Forget the demo fleet; the next `make run` seeds a fresh one.
clean-demo:
	rm -rf target/demo

## Release packages with Tauri's bundler (scripts/dist.sh): a .deb and an AppImage under
## target/release/bundle/, each with the app, the `overseer` CLI and the demo agent.
## The AppImage bundler fetches linuxdeploy from github.com; offline, DIST_BUNDLES=deb.
DIST_BUNDLES ?= deb,appimage

dist: setup
	DIST_BUNDLES=$(DIST_BUNDLES) scripts/dist.sh

## The packages installed and run (tests/dist/run.sh): the .deb unpacked into a temporary
## root and the AppImage, each opened under Xvfb on a fresh data dir with the demo fleet.
dist-test: dist
	DIST_BUNDLES=$(DIST_BUNDLES) tests/dist/run.sh
