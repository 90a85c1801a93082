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

.PHONY: all help build example test test-slurm testdeps lint tools bench coverage fuzz docs clean

all: build

help:
	@echo 'Targets:'
	@echo '  build  static binaries bin/nel and bin/nel-run (VERSION=$(VERSION))'
	@echo '  example  build, then run examples/quickstart.cue: a full local evaluation against the simulated endpoint'
	@echo '  test   the whole suite (after testdeps): go test -count=1 ./..., skips listed at the end'
	@echo '  test-slurm  the end-to-end scenarios on a real SLURM cluster (a private one, started and stopped; needs root)'
	@echo '  testdeps  install what the tests need when missing (.ci/testdeps: apt packages, the DuckDB reader)'
	@echo '  lint   gofmt, go vet, staticcheck $(STATICCHECK_VERSION), shellcheck .ci/run'
	@echo '  tools  fetch and build the lint tools'
	@echo '  bench  run the benchmarks'
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
# keeps under its budget (33 MB since SQLite, issue 21) with room for the scorers.
NELRUN_TAGS := noasm,arrow_json_stdlib

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/nel ./cmd/nel
	CGO_ENABLED=0 go build -tags $(NELRUN_TAGS) -trimpath -ldflags "$(LDFLAGS)" -o bin/nel-run ./cmd/nel-run

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
# then a table of nel-run's targets from their figures (runtime/shard and
# cmd/nel-run bench_test.go). The nel-run ones measure bin/nel-run as built
# above. The whole output is also in bin/bench.txt.
bench: build
	@{ NEL_RUN_BIN=$(CURDIR)/bin/nel-run go test -p 1 -run '^$$' -bench . -benchtime 2s -benchmem ./... 2>&1; \
		echo $$? > bin/.bench-status; } | tee bin/bench.txt
	@awk "$$BENCH_TABLE" bin/bench.txt
	@exit $$(cat bin/.bench-status)

# The Monte-Carlo check of every interval and paired test nel reports
# (analysis/coverage): the full grid, 5,000 simulated runs a case
# (NEL_COVERAGE_REPS to change), about 8 CPU-minutes (cases run in parallel). Its table is the one in
# docs/statistics.md; `go test` runs a short form, `make bench` this one.
coverage:
	go test -run '^$$' -bench '^BenchmarkCoverage$$' -benchtime 1x -timeout 30m ./analysis/coverage

# The table `make bench` prints: metric values by benchmark and unit.
define BENCH_TABLE
/^Benchmark/ {
	name = $$1
	if (match(name, /-[0-9]+$$/)) { cpus = substr(name, RSTART + 1); name = substr(name, 1, RSTART - 1) }
	for (i = 3; i < NF; i += 2) v[name, $$(i + 1)] = $$i
}
function row(label, b, unit, shown, goal, cmp, limit,   x, verdict) {
	if (!((b, unit) in v)) { printf "%-46s %14s\n", label, "not run"; return }
	x = v[b, unit] + 0
	verdict = ""
	if (cmp == ">=") verdict = x >= limit ? "ok" : "MISSED"
	if (cmp == "<=") verdict = x <= limit ? "ok" : "MISSED"
	printf "%-46s %10.6g %-9s %-16s %s\n", label, x, shown, goal, verdict
}
END {
	printf "\nnel-run targets (GOMAXPROCS %s; other load on the machine lowers the wall-clock figures)\n", cpus
	printf "%-46s %10s %-9s %-16s %s\n", "", "measured", "", "target", ""
	row("shard end to end, 0 latency, 128 in flight", "BenchmarkShardThroughput", "samples/s", "samples/s", ">= 5000", ">=", 5000)
	row("  CPU per sample (client + simulator)", "BenchmarkShardThroughput", "cpu-us/sample", "us")
	row("efficiency, 2000 in flight, 1 s, steady", "BenchmarkShardEfficiency2000", "%steady", "%", ">= 99", ">=", 99)
	row("  whole run: start-up, ramp, tail, Parquet", "BenchmarkShardEfficiency2000", "%efficiency", "%")
	row("  CPU per sample (client + simulator)", "BenchmarkShardEfficiency2000", "cpu-us/sample", "us")
	row("  steady state, latency 1 s +- 300 ms", "BenchmarkShardEfficiency2000Jitter", "%steady", "%")
	row("peak RSS of nel-run shard, 10000 in flight", "BenchmarkNelRunInFlight10k", "peak-RSS-MB", "MB", "<= 1000", "<=", 1000)
	row("  efficiency at 10000 in flight, 1 s latency", "BenchmarkNelRunInFlight10k", "%efficiency", "%")
	row("  client CPU per sample", "BenchmarkNelRunInFlight10k", "client-cpu-us/sample", "us")
	row("  open-files hard limit", "BenchmarkNelRunInFlight10k", "nofile-hard", "", ">= 10064", ">=", 10064)
	row("merge + statistics + eval.json, 1M rows/16 shards", "BenchmarkMerge1M", "s/op", "s", "<= 3", "<=", 3)
	row("  peak RSS of nel-run merge", "BenchmarkMerge1M", "peak-RSS-MB", "MB", "<= 1000", "<=", 1000)
	row("  DuckDB count/mean/percentiles, same shards", "BenchmarkMerge1M", "duckdb-s", "s")
	row("  ratio nel merge / DuckDB", "BenchmarkMerge1M", "ratio", "x")
	# 33, not 30: SQLite for the caching interceptor (issue 21, modernc.org/sqlite) costs 4.2 MB (28.38 → 32.58 MB with the interceptors).
	row("nel-run binary (stripped, static)", "BenchmarkNelRunVersion", "binary-MB", "MB", "<= 33", "<=", 33)
	row("interval coverage, worst case of the grid", "BenchmarkCoverage", "min-coverage-%", "%", ">= 94", ">=", 94)
	row("nel-run --version, median", "BenchmarkNelRunVersion", "median-ms", "ms", "<= 20", "<=", 20)
	row("  runs", "BenchmarkNelRunVersion", "runs", "")
	row("HumanEval programs, local sandbox, 2 slots", "BenchmarkHumanEval2Slots", "programs/s", "programs/s", ">= 20", ">=", 20)
	row("  sandbox start-up overhead, true", "BenchmarkLocalStartup/true", "overhead-ms/op", "ms")
	row("  sandbox start-up overhead, python3", "BenchmarkLocalStartup/python", "overhead-ms/op", "ms")
}
endef
export BENCH_TABLE

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
