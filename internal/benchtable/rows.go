package main

// A Row is one figure of the table: a unit one benchmark reports, the same
// figure of a peer measured in the same run when there is one, and the
// target it is held to.
type Row struct {
	Label string
	// Bench is the benchmark's name without the -GOMAXPROCS suffix
	// (sub-benchmarks as go test prints them: BenchmarkX/C=64).
	Bench, Unit string
	// Shown is the unit as the table prints it ("MB" for peak-RSS-MB),
	// and Scale what a value is multiplied by to be in it (0 for 1:
	// 1e-6 shows ns/op in ms). Targets are in the shown unit.
	Shown string
	Scale float64
	// Peer names the program measured beside nel (DuckDB, a Python
	// asyncio client) and PeerUnit the unit Bench reports its figure in;
	// both empty when the figure has no peer.
	Peer, PeerUnit string
	// Op and Target are the target ("" for a figure shown for context);
	// OnRatio holds it to nel ÷ peer instead of nel's figure.
	Op      string
	Target  float64
	OnRatio bool
}

// Rows are the table's figures, in its order: the targets of issue 23 and
// the earlier ones (binary size, start-up, coverage, sandboxes). A name or
// unit here is the contract with the benchmark that reports it; a
// benchmark that did not run shows as "not run".
func Rows() []Row {
	return []Row{
		{Label: "shard end to end, 0 latency, 128 in flight", Bench: "BenchmarkShardThroughput", Unit: "samples/s", Shown: "samples/s", Op: ">=", Target: 5000},
		{Label: "  CPU per sample (client + simulator)", Bench: "BenchmarkShardThroughput", Unit: "cpu-us/sample", Shown: "us"},
		// nel-run shard and nel-run sim-server, each its own process.
		{Label: "efficiency, 2000 in flight, 1 s, steady", Bench: "BenchmarkNelRunEfficiency2000/chain=none", Unit: "%steady", Shown: "%", Op: ">=", Target: 99},
		{Label: "  whole run: start-up, ramp, tail, Parquet", Bench: "BenchmarkNelRunEfficiency2000/chain=none", Unit: "%efficiency", Shown: "%"},
		{Label: "  CPU per sample, nel-run shard", Bench: "BenchmarkNelRunEfficiency2000/chain=none", Unit: "client-cpu-us/sample", Shown: "us"},
		{Label: "  CPU per sample, the simulator", Bench: "BenchmarkNelRunEfficiency2000/chain=none", Unit: "sim-cpu-us/sample", Shown: "us"},
		{Label: "  steady, through NeMo's interceptors", Bench: "BenchmarkNelRunEfficiency2000/chain=nemo", Unit: "%steady", Shown: "%"},
		{Label: "  CPU per sample, nel-run shard, interceptors", Bench: "BenchmarkNelRunEfficiency2000/chain=nemo", Unit: "client-cpu-us/sample", Shown: "us"},
		{Label: "  steady state, latency 1 s +- 300 ms", Bench: "BenchmarkShardEfficiency2000Jitter", Unit: "%steady", Shown: "%"},

		// Issue 23, target 1: a shard's memory does not grow with its samples.
		{Label: "peak RSS of nel-run shard, 10k samples", Bench: "BenchmarkShardMemory", Unit: "peak-RSS-MB-10k", Shown: "MB"},
		{Label: "  the same, 80k samples", Bench: "BenchmarkShardMemory", Unit: "peak-RSS-MB-80k", Shown: "MB"},
		{Label: "  ratio 80k / 10k", Bench: "BenchmarkShardMemory", Unit: "ratio-80k/10k", Shown: "x", Op: "<=", Target: 1.3},

		// No target yet: every shard reads the whole dataset, streamed, to
		// number its records (docs/scaling.md, m_d and c_d); it decodes
		// only its own.
		{Label: "shard 0 of 1000 of a 1M-item JSONL dataset, peak RSS", Bench: "BenchmarkShardDataset1M", Unit: "peak-RSS-MB", Shown: "MB"},
		{Label: "  its CPU, ~1000 samples, the rest keyed only", Bench: "BenchmarkShardDataset1M", Unit: "cpu-s", Shown: "s"},
		{Label: "  the same as a JSON array, peak RSS", Bench: "BenchmarkShardDataset1MJSON", Unit: "peak-RSS-MB", Shown: "MB"},
		{Label: "  its CPU", Bench: "BenchmarkShardDataset1MJSON", Unit: "cpu-s", Shown: "s"},
		{Label: "  the same as Parquet, peak RSS", Bench: "BenchmarkShardDataset1MParquet", Unit: "peak-RSS-MB", Shown: "MB"},
		{Label: "  its CPU", Bench: "BenchmarkShardDataset1MParquet", Unit: "cpu-s", Shown: "s"},

		// Target 2: 10,000 requests in flight in 256 MB.
		{Label: "peak RSS of nel-run shard, 10000 in flight", Bench: "BenchmarkNelRunInFlight10k", Unit: "peak-RSS-MB", Shown: "MB",
			Peer: "asyncio", PeerUnit: "asyncio-peak-RSS-MB", Op: "<=", Target: 256},
		{Label: "  efficiency at 10000 in flight, 1 s latency", Bench: "BenchmarkNelRunInFlight10k", Unit: "%efficiency", Shown: "%"},
		{Label: "  client CPU per sample", Bench: "BenchmarkNelRunInFlight10k", Unit: "client-cpu-us/sample", Shown: "us"},
		{Label: "  open-files hard limit", Bench: "BenchmarkNelRunInFlight10k", Unit: "nofile-hard", Op: ">=", Target: 10064},

		// Target 4: the client costs no more than a Python asyncio one.
		{Label: "client CPU per 1,000 samples", Bench: "BenchmarkClientCost", Unit: "cpu-s/1000", Shown: "s",
			Peer: "asyncio", PeerUnit: "asyncio-cpu-s/1000", Op: "<=", Target: 1, OnRatio: true},
		{Label: "client throughput, 0 latency", Bench: "BenchmarkClientCost", Unit: "samples/s", Shown: "samples/s",
			Peer: "asyncio", PeerUnit: "asyncio-samples/s", Op: ">=", Target: 1, OnRatio: true},

		// Target 5: efficiency against a concurrency-capped server.
		{Label: "efficiency vs a server capped at C=64", Bench: "BenchmarkEfficiencyCapped/C=64", Unit: "%efficiency", Shown: "%",
			Peer: "asyncio", PeerUnit: "asyncio-%efficiency", Op: ">=", Target: 97},
		{Label: "efficiency vs a server capped at C=512", Bench: "BenchmarkEfficiencyCapped/C=512", Unit: "%efficiency", Shown: "%",
			Peer: "asyncio", PeerUnit: "asyncio-%efficiency", Op: ">=", Target: 97},

		// Target 3: merge within 2x of DuckDB, in 256 MB.
		{Label: "merge + statistics + bundle, 1M rows/16 shards", Bench: "BenchmarkMerge1M", Unit: "s/op", Shown: "s",
			Peer: "DuckDB", PeerUnit: "duckdb-s", Op: "<=", Target: 2, OnRatio: true},
		{Label: "  peak RSS of nel-run merge", Bench: "BenchmarkMerge1M", Unit: "peak-RSS-MB", Shown: "MB", Op: "<=", Target: 256},

		// Target 6: a 1M-sample, 1,000-shard plan compiles in under a second.
		{Label: "nel compile, 1M samples in 1000 shards", Bench: "BenchmarkCompilePlan1M", Unit: "s/op", Shown: "s", Op: "<", Target: 1},
		{Label: "  its CPU, user + system", Bench: "BenchmarkCompilePlan1M", Unit: "cpu-s/op", Shown: "s"},
		{Label: "nel compile examples/suite.cue", Bench: "BenchmarkProcessCompileSuite", Unit: "ns/op", Shown: "ms", Scale: 1e-6, Op: "<=", Target: 100},
		{Label: "nel validate, 20 benchmarks", Bench: "BenchmarkProcessValidate20", Unit: "ns/op", Shown: "ms", Scale: 1e-6, Op: "<=", Target: 100},

		// 40, not 30: SQLite for the caching interceptor (issue 21,
		// modernc.org/sqlite) costs 4.2 MB (28.38 → 32.58 MB with the
		// interceptors), and the ECS Fargate sandbox (issue 22 names
		// aws-sdk-go-v2 and its standard credential chain; the sandbox runs
		// where the samples do, in nel-run) 4.40 MB (33.19 → 37.59 MB), its
		// SSM discovery of NeMo's settings 1.22 MB (37.59 → 38.81 MB); with
		// this round's other work 38.96 MB, and 1 MB of room for the scorers.
		{Label: "nel-run binary (stripped, static)", Bench: "BenchmarkNelRunVersion", Unit: "binary-MB", Shown: "MB", Op: "<=", Target: 40},
		{Label: "interval coverage, worst case of the grid", Bench: "BenchmarkCoverage", Unit: "min-coverage-%", Shown: "%", Op: ">=", Target: 94},
		{Label: "nel-run --version, median", Bench: "BenchmarkNelRunVersion", Unit: "median-ms", Shown: "ms", Op: "<=", Target: 20},
		{Label: "  runs", Bench: "BenchmarkNelRunVersion", Unit: "runs"},
		{Label: "HumanEval programs, local sandbox, 2 slots", Bench: "BenchmarkHumanEval2Slots", Unit: "programs/s", Shown: "programs/s", Op: ">=", Target: 20},
		{Label: "  sandbox start-up overhead, true", Bench: "BenchmarkLocalStartup/true", Unit: "overhead-ms/op", Shown: "ms"},
		{Label: "  sandbox start-up overhead, python3", Bench: "BenchmarkLocalStartup/python", Unit: "overhead-ms/op", Shown: "ms"},
	}
}
