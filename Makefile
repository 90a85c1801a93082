# Build, test and lint nel. Run `make help` for the targets.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit and its date, not the time of the build: building one commit
# twice gives the same binaries (nel --version prints both).
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

# staticcheck 2026.2.2; works with Go 1.26. Run through `go run` so it is
# not a module dependency.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Fuzz targets as PACKAGE:FuzzName, each run for FUZZTIME.
FUZZ_TARGETS ?= ./runtime/shellquote:FuzzQuote ./compiler:FuzzLoad ./compiler:FuzzInjectScript
FUZZTIME ?= 30s

.PHONY: all help build image example test test-slurm testdeps lint tools bench coverage fuzz docs clean

all: build

help:
	@echo 'Targets:'
	@echo '  build  static binaries bin/nel and bin/nel-run (VERSION=$(VERSION))'
	@echo '  image  the container images $(IMAGE) (nel and nel-run on distroless) and $(IMAGE)-sandbox (with bubblewrap), with docker'
	@echo '  example  build, then run examples/quickstart.cue: a full local evaluation against the simulated endpoint'
	@echo '  test   the whole suite (after testdeps): go test -count=1 ./..., skips listed at the end'
	@echo '  test-slurm  the end-to-end scenarios on a real SLURM cluster (a private one, started and stopped; needs root)'
	@echo '  testdeps  install what the tests need when missing (.ci/testdeps: apt packages, the DuckDB reader)'
	@echo '  lint   gofmt, go vet, staticcheck $(STATICCHECK_VERSION), shellcheck .ci/run'
	@echo '  tools  fetch and build the lint tools'
	@echo '  bench  run the benchmarks; print nel vs peers (DuckDB, Python asyncio) against the targets, also as bin/bench.json;'
	@echo '         fails when a benchmark fails to run, not when a target is missed (a FAIL row);'
	@echo '         BENCH=regexp BENCH_PKGS=./pkg runs a few (profile one: nel-run shard/merge --cpuprofile/--memprofile)'
	@echo '  coverage  the Monte-Carlo coverage suite of the intervals and tests, in full: a table (docs/statistics.md)'
	@echo '  fuzz   run each of FUZZ_TARGETS for FUZZTIME ($(FUZZTIME))'
	@echo '  docs   regenerate docs/cli/ (the command reference) and the README'"'"'s exit-code table from the commands'
	@echo '  clean  remove bin/'

# nel-run is built with two of arrow-go's tags. noasm: Parquet's encoder
# links arrow/compute, whose hand-written SIMD kernels are 6 MB of machine
# code nel never calls (it writes and reads plain columns). arrow_json_stdlib:
# arrow's JSON (Arrow arrays, variants, logical types as JSON, none of which
# nel-run calls) through encoding/json rather than goccy/go-json, 1.3 MB less;
# the Parquet nel-run writes is byte for byte the same. With both the binary
# keeps under its budget (33 MB since SQLite, issue 21; 40 MB since the ECS
# Fargate sandbox's aws-sdk-go-v2 and SSM clients, issue 22).
NELRUN_TAGS := noasm,arrow_json_stdlib

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/nel ./cmd/nel
	CGO_ENABLED=0 go build -tags $(NELRUN_TAGS) -trimpath -ldflags "$(LDFLAGS)" -o bin/nel-run ./cmd/nel-run

# The container images (Dockerfile): the default target, and the one
# with bubblewrap and python3 for the local sandbox.
IMAGE ?= nel:$(VERSION)
image:
	@command -v docker >/dev/null 2>&1 || { echo 'make image: docker is not installed; build the Dockerfile with another OCI builder (podman build, buildah bud) or install docker' >&2; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t $(IMAGE) .
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) --target sandbox -t $(IMAGE)-sandbox .

# The README's main command: a full local evaluation (GSM8K-format problems,
# 4 repeats, 2 shards) against nel's simulated endpoint; no GPU, network or
# key. Results land in examples/eval_results/quickstart/ (output.dir is
# relative to the recipe).
example: build
	bin/nel run examples/quickstart.cue

# The whole suite, after testdeps, through internal/gotest: a line per
# package, the output of what failed, and every skipped test with its
# reason at the end.
test: testdeps
	go run ./internal/gotest -count=1 ./...

# The end-to-end scenarios (cmd/nel/testdata/slurm) on a real SLURM cluster:
# .ci/test-slurm installs Debian's slurm-wlm if missing, starts a private
# 3-node cluster, runs them and stops it. NEL_SLURM_SITE=1 uses the cluster
# of $$SLURM_CONF instead (README: "Testing on a real SLURM cluster").
test-slurm:
	.ci/test-slurm

# Installs what the tests need when it is missing (.ci/testdeps: Debian
# packages as root or through sudo -n, and the pinned DuckDB reader through
# npm ci). NEL_NO_INSTALL=1 only reports what is missing.
testdeps:
	.ci/testdeps

lint:
	@unformatted="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go vet -tags slurm ./cmd/nel
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags slurm ./cmd/nel
	shellcheck .ci/run .ci/testdeps .ci/test-slurm .ci/slurm-cluster/*.sh .ci/slurm-cluster/pyxis-shim/build.sh

tools:
	$(STATICCHECK) -version

# All benchmarks, one package at a time (-p 1: the timings are wall clock),
# then the table of nel's figures beside their peers' (internal/benchtable:
# the rows, their targets, PASS/FAIL), also written as bin/bench.json. The
# nel-run ones measure bin/nel-run as built above. The whole output is also
# in bin/bench.txt. The exit status is go test's: a benchmark that fails to
# run fails the target, a missed target is a FAIL row and does not.
# BENCH and BENCH_PKGS narrow the run (make bench BENCH=Merge1M
# BENCH_PKGS=./cmd/nel-run); the other rows then say "not run".
BENCH ?= .
BENCH_PKGS ?= ./...
bench: build
	@{ NEL_RUN_BIN=$(CURDIR)/bin/nel-run go test -p 1 -run '^$$' -bench '$(BENCH)' -benchtime 2s -benchmem $(BENCH_PKGS) 2>&1; \
		echo $$? > bin/.bench-status; } | tee bin/bench.txt
	@go run ./internal/benchtable -version $(VERSION) -json bin/bench.json bin/bench.txt
	@exit $$(cat bin/.bench-status)

# The Monte-Carlo check of every interval and paired test nel reports
# (analysis/coverage): the full grid, 5,000 simulated runs a case
# (NEL_COVERAGE_REPS to change), about 8 CPU-minutes (cases run in parallel). Its table is the one in
# docs/statistics.md; `go test` runs a short form, `make bench` this one.
coverage:
	go test -run '^$$' -bench '^BenchmarkCoverage$$' -benchtime 1x -timeout 30m ./analysis/coverage

fuzz:
	@set -e; for target in $(FUZZ_TARGETS); do \
		pkg="$${target%%:*}"; name="$${target#*:}"; \
		echo "==> $$name in $$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done

# The command reference in docs/cli/ and the README's exit-code table are
# generated from the commands; their tests fail when the checked-in copies
# are stale, and -update rewrites them.
docs:
	go test ./cmd/nel -run '^(TestCLIReference|TestREADMEExitCodes)$$' -update
	go test ./cmd/nel-run -run '^TestCLIReference$$' -update

clean:
	rm -rf bin
