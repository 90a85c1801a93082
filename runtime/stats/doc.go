// Package stats is the statistics core of nel: the headline estimators
// (pass@k, pass^k), interval estimates (CLT, Student t, clustered standard
// errors, percentile bootstrap), the paired tests that `nel compare` and
// `nel gate` use (exact binomial / McNemar, sign test, sign-flip
// permutation test, Holm adjustment) and the variance decomposition behind
// the power and repeat-planning report.
//
// The formulas follow NeMo Evaluator (so that nel reports the same numbers)
// and Miller, "Adding Error Bars to Evals" (arXiv 2411.00640). The
// special functions come from gonum's mathext (the normal quantile, the
// regularized incomplete beta function behind Student's t); only gonum's
// small mathext package is linked, not stat or distuv, whose matrix code
// nel-run does not need. What remains here by hand is what gonum lacks or
// computes less precisely than the reference tests demand, each with its
// reason and reference at the function: the statistics procedures
// themselves (pass@k, clustered standard errors, the paired tests, Holm,
// the bootstrap), numpy's linear percentile (gonum's stat.Quantile has no
// such rule), Hill's large-df t expansion, Loader's binomial density for
// exact tails at any n (gonum's log-gamma form loses 1e−10 at n = 2·10⁵)
// and the exact binomial sampler whose stream the seeded bootstrap fixes.
//
// Randomised procedures (Bootstrap, SignFlip) are deterministic for a given
// seed: they draw from a math/rand/v2 PCG generator seeded with
// rand.NewPCG(seed, seed^0x9E3779B97F4A7C15). They do not reproduce numpy's
// random streams, only its distributions.
//
// Functions document their preconditions. Violating one that only a
// programming error can cause (a negative count, a level outside (0, 1))
// panics; callers validate user input before calling. The distribution
// functions follow the math package and return NaN only for arguments
// outside their domain.
package stats

// Defaults shared by the metrics bundle, compare and gate, as in NeMo
// Evaluator (numpy.random.default_rng(42), 10,000 resamples).
const (
	DefaultResamples = 10000
	DefaultSeed      = 42
)
