package tbench

import "strings"

// UpstreamURL is Terminal-Bench v1's repository, where NeMo Evaluator
// clones it from.
const UpstreamURL = "https://github.com/laude-institute/terminal-bench.git"

// Benchmark is one of NeMo Evaluator's benchmarks built from Terminal-Bench
// v1's repository.
type Benchmark struct {
	Name string
	// Tasks are the task folders it runs; nil for all of them.
	Tasks []string
	// Unsolvable are the tasks that fail even for the oracle agent
	// (infrastructure or task limits): reported as their own category.
	Unsolvable []string
}

// Lookup returns the benchmark NeMo Evaluator registers as name:
// terminal-bench-v1 (every task), terminal-bench-hard (a curated 47) and
// terminal-bench-hard-aa-split (the 44 of the AA scoring pipeline).
func Lookup(name string) (Benchmark, bool) {
	switch name {
	case "terminal-bench-v1":
		return Benchmark{Name: name}, true
	case "terminal-bench-hard":
		return Benchmark{Name: name, Tasks: strings.Fields(hardCommon + " causal-inference-r install-windows-3.11 lean4-proof mcmc-sampling-stan")}, true
	case "terminal-bench-hard-aa-split":
		return Benchmark{Name: name, Tasks: strings.Fields(hardCommon + " super-benchmark-upet"),
			Unsolvable: []string{"feal-differential-cryptanalysis", "install-windows-xp", "make-doom-for-mips", "run-pdp11-code"}}, true
	}
	return Benchmark{}, false
}

// hardCommon are the tasks both -hard lists hold (NeMo Evaluator's sets,
// as data). Lookup's lists are sorted by the converter, not here.
const hardCommon = `aimo-airline-departures blind-maze-explorer-5x5 cartpole-rl-training
chem-property-targeting chem-rf circuit-fibsqrt cobol-modernization configure-git-webserver
cross-entropy-method extract-moves-from-video feal-differential-cryptanalysis
feal-linear-cryptanalysis form-filling git-multibranch gpt2-codegolf install-windows-xp
make-doom-for-mips make-mips-interpreter model-extraction-relu-logits movie-helper
neuron-to-jaxley-conversion oom organization-json-generator parallel-particle-simulator
parallelize-graph password-recovery path-tracing path-tracing-reverse play-zork
play-zork-easy polyglot-rust-c prove-plus-comm pytorch-model-cli rare-mineral-allocation
recover-obfuscated-files reverse-engineering run-pdp11-code stable-parallel-kmeans
swe-bench-astropy-1 swe-bench-astropy-2 train-fasttext word2vec-from-scratch write-compressor`
