#!/usr/bin/env python3
"""Generate vectors.json: reference values for runtime/stats from scipy/numpy.

Regenerate (Debian/Ubuntu: apt-get install python3-scipy python3-numpy) with

    python3 testdata/stats/gen_vectors.py > testdata/stats/vectors.json

from the repository root. The Go tests read the committed JSON and do not
need Python. Exact quantities (pass@k, pass^k) come from integer arithmetic
(fractions), the rest from scipy.stats / numpy, and the formulas NeMo
Evaluator implements in numpy (clustered SE, Holm, the decomposition) are
written out here from their definitions.
"""

import json
import math
import sys
from fractions import Fraction

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(20240611)


def f(x):
    return float(x)


# --- pass@k and pass^k: exact rationals -----------------------------------
passk_cases = [
    (1, 0, 1), (1, 1, 1), (2, 1, 1), (2, 1, 2), (5, 0, 3), (5, 2, 3), (5, 3, 3),
    (10, 1, 1), (10, 3, 5), (10, 9, 10), (16, 4, 8), (20, 0, 20), (20, 20, 1),
    (100, 1, 1), (100, 1, 10), (100, 37, 10), (100, 50, 50), (200, 3, 1),
    (200, 3, 10), (200, 3, 100), (200, 100, 100), (200, 1, 200), (200, 199, 2),
    (1000, 7, 10), (1000, 500, 3), (1000, 990, 5), (2000, 1, 1000),
]
pass_at_k = []
pass_hat_k = []
for n, c, k in passk_cases:
    at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    hat = Fraction(math.comb(c, k), math.comb(n, k))
    pass_at_k.append({"n": n, "c": c, "k": k, "want": f(at)})
    pass_hat_k.append({"n": n, "c": c, "k": k, "want": f(hat)})

# --- normal ---------------------------------------------------------------
norm_ppf = []
for p in [1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 0.001, 0.01, 0.025, 0.05, 0.075,
          0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 0.9, 0.925, 0.95,
          0.975, 0.99, 0.999, 1 - 1e-10, 1 - 2**-52]:
    norm_ppf.append({"p": p, "want": f(stats.norm.ppf(p))})
norm_cdf = []
for x in [-37.5, -30, -20, -10, -5, -3, -1.959963984540054, -1, -0.5, -1e-8, 0,
          1e-8, 0.5, 1, 1.959963984540054, 3, 5, 8]:
    norm_cdf.append({"x": x, "want": f(stats.norm.cdf(x))})

# --- Student t ------------------------------------------------------------
def t_ppf_polished(p, df):
    """scipy's t.ppf refined by Newton steps on scipy's t.cdf/t.sf.

    scipy 1.10's t.ppf (Cephes stdtrit) is only accurate to about 1e-9
    relative (e.g. df=2, p=0.01 is off by 2e-9 from the closed form
    (2p-1)/sqrt(2p(1-p))), while t.cdf/t.sf are accurate to about 1e-14, so
    a few Newton steps on the smaller tail give a full-precision reference.
    The closed forms for df=1 and df=2 below check the result."""
    x = stats.t.ppf(p, df)
    if p == 0.5:
        return 0.0
    for _ in range(4):
        if p < 0.5:
            err = stats.t.cdf(x, df) - p
        else:
            err = (1 - p) - stats.t.sf(x, df)  # = cdf(x) - p
        x = x - err / stats.t.pdf(x, df)
    return x


for p in [1e-9, 0.01, 0.1, 0.3, 0.7, 0.975, 1 - 1e-6]:
    # Cauchy: tan(π(p−½)), written as ∓cot(π·min(p, 1−p)) to stay exact.
    cauchy = -1 / math.tan(math.pi * p) if p < 0.5 else 1 / math.tan(math.pi * (1 - p))
    assert abs(t_ppf_polished(p, 1) - cauchy) <= 1e-13 * abs(cauchy), p
    two = (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    assert abs(t_ppf_polished(p, 2) - two) <= 1e-13 * abs(two), p

t_ppf = []
for df in [1, 1.5, 2, 3, 4, 5, 7.5, 9, 10, 29, 30, 100, 1000, 1e5]:
    for p in [1e-12, 1e-6, 1e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.4, 0.5, 0.6,
              0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-9]:
        t_ppf.append({"p": p, "df": df, "want": f(t_ppf_polished(p, df))})
t_cdf = []
for df in [1, 1.5, 2, 3, 5, 9, 10, 30, 100, 1000, 1e5]:
    for x in [-1e6, -100, -20, -5, -2.5, -1, -0.1, 0, 0.1, 1, 2.5, 5, 20]:
        t_cdf.append({"x": x, "df": df, "want": f(stats.t.cdf(x, df))})


# --- CLT and t intervals ----------------------------------------------------
def clt(xs, level, dist):
    xs = np.asarray(xs, dtype=float)
    m = xs.mean()
    if len(xs) < 2:
        return m, 0.0, m, m
    se = xs.std(ddof=1) / math.sqrt(len(xs))
    if dist == "t":
        crit = t_ppf_polished((1 + level) / 2, len(xs) - 1)
    else:
        crit = stats.norm.ppf((1 + level) / 2)
    return m, se, m - crit * se, m + crit * se


samples = [
    [0.5],
    [0.0, 1.0],
    [1, 0, 1, 1, 0, 1, 1, 1, 0, 1],
    list(rng.random(7)),
    list(rng.normal(0.3, 2.0, 40)),
    list((rng.random(500) < 0.83).astype(float)),
    list(rng.beta(2, 5, 1000)),
]
intervals = []
for si, xs in enumerate(samples):
    for level in [0.9, 0.95, 0.99]:
        for dist in ["z", "t"]:
            m, se, lo, hi = clt(xs, level, dist)
            intervals.append({"sample": si, "level": level, "dist": dist,
                              "mean": f(m), "se": f(se), "lo": f(lo), "hi": f(hi)})

describe = []
for si, xs in enumerate(samples):
    xs = np.asarray(xs, dtype=float)
    describe.append({"sample": si, "mean": f(xs.mean()),
                     "var": f(xs.var(ddof=1)) if len(xs) > 1 else 0.0})


# --- clustered SE (NeMo clustered_ci) ---------------------------------------
def clustered_se(xs, cl):
    xs = np.asarray(xs, dtype=float)
    cl = np.asarray(cl)
    groups = np.unique(cl)
    g = len(groups)
    if g < 2:
        return xs.std(ddof=1) / math.sqrt(len(xs)), g
    e = xs - xs.mean()
    sums = np.array([e[cl == c].sum() for c in groups])
    n = len(xs)
    return math.sqrt(g / (g - 1) * (sums ** 2).sum() / n ** 2), g


clustered = []
for n, g, effect in [(12, 3, 0.0), (40, 5, 0.3), (400, 50, 0.2), (97, 10, 0.5), (30, 1, 0.0)]:
    cl = rng.integers(0, g, n)
    cl[:g] = np.arange(g)  # every cluster present
    u = rng.normal(0, effect, g)
    xs = np.clip(0.6 + u[cl] + rng.normal(0, 0.3, n), 0, 1)
    se, groups = clustered_se(xs, cl)
    clustered.append({"xs": [f(x) for x in xs], "cluster": [int(c) * 7 - 3 for c in cl],
                      "se": f(se), "groups": int(groups)})

# --- exact binomial tests ---------------------------------------------------
binom_greater = []
for k, n, p in [(0, 10, 0.5), (1, 10, 0.5), (5, 10, 0.5), (8, 10, 0.5), (10, 10, 0.5),
                (3, 3, 0.5), (7, 20, 0.1), (2, 50, 0.001), (15, 100, 0.05),
                (60, 100, 0.5), (40, 100, 0.5), (550, 1000, 0.5), (600, 1000, 0.5),
                (700, 1000, 0.5), (5200, 10000, 0.5), (5000, 10000, 0.5),
                (30, 1000, 0.01), (1, 1000, 0.01), (9990, 10000, 0.999),
                (100000, 200000, 0.5), (101000, 200000, 0.5), (1, 1, 0.3),
                (17, 40, 0.25), (3, 100000, 1e-5)]:
    r = stats.binomtest(k, n, p, alternative="greater") if k >= 0 else None
    binom_greater.append({"k": k, "n": n, "p": p, "want": f(r.pvalue)})

mcnemar = []
for b, c in [(0, 0), (0, 1), (1, 0), (5, 5), (10, 2), (2, 10), (30, 12), (130, 100), (0, 25)]:
    want = 1.0 if b + c == 0 else f(stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue)
    mcnemar.append({"b": b, "c": c, "want": want})


# --- Holm ------------------------------------------------------------------
def holm(ps):
    """Holm–Bonferroni from the definition: sort ascending, multiply the
    i-th smallest (1-based) by m−i+1, running maximum, cap at 1."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adj = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * ps[i])
        adj[i] = min(1.0, running)
    return adj


# Hand-computed textbook cases; the script checks itself against them.
# 1) m=4: sorted .005,.01,.03,.04 → ×4,×3,×2,×1 = .02,.03,.06,.04 →
#    running max .02,.03,.06,.06.
# 2) Wikipedia-style m=3 with a monotonicity step: .01,.04,.03 →
#    sorted .01,.03,.04 ×3,×2,×1 = .03,.06,.04 → .03,.06,.06.
# 3) capping: .3,.5,.02 → .02×3=.06, .3×2=.6, .5×1=.5→.6.
holm_textbook = [
    {"ps": [0.01, 0.04, 0.03, 0.005], "want": [0.03, 0.06, 0.06, 0.02]},
    {"ps": [0.01, 0.04, 0.03], "want": [0.03, 0.06, 0.06]},
    {"ps": [0.3, 0.5, 0.02], "want": [0.6, 0.6, 0.06]},
    {"ps": [0.6, 0.7], "want": [1.0, 1.0]},
]
for case in holm_textbook:
    got = holm(case["ps"])
    assert all(abs(a - b) < 1e-15 for a, b in zip(got, case["want"])), (case, got)
holm_vectors = list(holm_textbook)
for m in [1, 5, 20]:
    ps = [f(p) for p in rng.random(m) ** 3]
    holm_vectors.append({"ps": ps, "want": holm(ps)})

# --- percentiles (numpy linear) --------------------------------------------
percentile = []
qs = [0, 0.5, 2.5, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 97.5, 99.5, 100]
for xs in [[3.0], [1.0, 2.0], list(rng.normal(size=11)), list(rng.random(400)),
           list((rng.random(999) < 0.3).astype(float))]:
    s = sorted(f(x) for x in xs)
    percentile.append({"sorted": s, "q": qs,
                       "want": [f(v) for v in np.percentile(np.array(s), qs)]})

# Bootstrap endpoints: a list of resample means in random order, and numpy's
# percentile at NeMo's (α/2, 1−α/2)·100 for the levels the Go test uses.
boot_means = [f(x) for x in rng.normal(0.7, 0.01, 2001)]
boot_percentiles = []
for level in [0.9, 0.95, 0.99]:
    alpha = 1 - level
    lo, hi = np.percentile(np.array(boot_means), [100 * alpha / 2, 100 * (1 - alpha / 2)])
    boot_percentiles.append({"level": level, "lo": f(lo), "hi": f(hi)})


# --- variance decomposition ---------------------------------------------------
def decompose(items):
    items = [np.asarray(it, dtype=float) for it in items if len(it) > 0]
    multi = [it for it in items if len(it) >= 2]
    within = float(np.mean([it.var(ddof=1) for it in multi])) if multi else 0.0
    means = np.array([it.mean() for it in items])
    k_h = len(items) / sum(1.0 / len(it) for it in items)
    var_means = means.var(ddof=1) if len(means) > 1 else 0.0
    between = max(0.0, var_means - within / k_h)
    return between, within, bool(multi)


decomp = []
for n_items, ks, diff in [(50, [4], (2, 3)), (200, [8], (1, 1)), (30, [1, 2, 3, 5], (3, 2)),
                          (20, [1], (2, 2)), (10, [16], (50, 50))]:
    items = []
    for i in range(n_items):
        k = ks[i % len(ks)]
        p = rng.beta(*diff)
        items.append([f(x) for x in (rng.random(k) < p).astype(float)])
    b, w, ok = decompose(items)
    decomp.append({"items": items, "between": f(b), "within": f(w), "within_ok": ok})

mde = []
for se, alpha, power in [(0.01, 0.05, 0.8), (0.03, 0.05, 0.9), (0.02, 0.01, 0.8), (1.0, 0.1, 0.5)]:
    mde.append({"se": se, "alpha": alpha, "power": power,
                "want": f((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)})

out = {
    "generator": "testdata/stats/gen_vectors.py",
    "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                 "python": sys.version.split()[0]},
    "pass_at_k": pass_at_k,
    "pass_hat_k": pass_hat_k,
    "norm_ppf": norm_ppf,
    "norm_cdf": norm_cdf,
    "t_ppf": t_ppf,
    "t_cdf": t_cdf,
    "samples": [[f(x) for x in xs] for xs in samples],
    "describe": describe,
    "intervals": intervals,
    "clustered": clustered,
    "binom_greater": binom_greater,
    "mcnemar": mcnemar,
    "holm": holm_vectors,
    "percentile": percentile,
    "boot_means": boot_means,
    "boot_percentiles": boot_percentiles,
    "decompose": decomp,
    "mde": mde,
}
json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
