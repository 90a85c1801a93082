package stats

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// The reference vectors come from scipy/numpy (and exact rationals) via
// testdata/stats/gen_vectors.py; regenerate them from the repository root
// with
//
//	python3 testdata/stats/gen_vectors.py > testdata/stats/vectors.json
//
// (Debian: apt-get install python3-scipy python3-numpy). The tests only
// read the committed JSON.
const vectorsPath = "../../testdata/stats/vectors.json"

type vectors struct {
	PassAtK  []passKCase                     `json:"pass_at_k"`
	PassHatK []passKCase                     `json:"pass_hat_k"`
	NormPPF  []struct{ P, Want float64 }     `json:"norm_ppf"`
	NormCDF  []struct{ X, Want float64 }     `json:"norm_cdf"`
	TPPF     []struct{ P, DF, Want float64 } `json:"t_ppf"`
	TCDF     []struct{ X, DF, Want float64 } `json:"t_cdf"`
	Samples  [][]float64                     `json:"samples"`
	Describe []struct {
		Sample    int
		Mean, Var float64
	} `json:"describe"`
	Intervals []struct {
		Sample           int
		Level            float64
		Dist             string
		Mean, SE, Lo, Hi float64
	} `json:"intervals"`
	Clustered []struct {
		Xs      []float64
		Cluster []int
		SE      float64
		Groups  int
	} `json:"clustered"`
	BinomGreater []struct {
		K, N int
		P    float64
		Want float64
	} `json:"binom_greater"`
	McNemar []struct {
		B, C int
		Want float64
	} `json:"mcnemar"`
	Holm []struct {
		Ps, Want []float64
	} `json:"holm"`
	Percentile []struct {
		Sorted, Q, Want []float64
	} `json:"percentile"`
	BootMeans       []float64 `json:"boot_means"`
	BootPercentiles []struct {
		Level, Lo, Hi float64
	} `json:"boot_percentiles"`
	Decompose []struct {
		Items           [][]float64
		Between, Within float64
		WithinOK        bool `json:"within_ok"`
	} `json:"decompose"`
	MDE []struct {
		SE, Alpha, Power, Want float64
	} `json:"mde"`
}

type passKCase struct {
	N, C, K int
	Want    float64
}

func loadVectors(t *testing.T) *vectors {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// near reports whether got is within rel relative error of want, or within
// abs absolute error (for values at or near 0, where relative error is
// meaningless).
func near(got, want, rel, abs float64) bool {
	if got == want {
		return true
	}
	d := math.Abs(got - want)
	return d <= rel*math.Abs(want) || d <= abs
}

// Tolerances. Exact quantities (rationals, sums, interpolation) are held
// to 1e−12 relative; quantiles to 1e−9; distribution functions and
// binomial tails, which both sides compute by different special-function
// algorithms, to 1e−11.
const (
	relExact    = 1e-12
	relQuantile = 1e-9
	relSpecial  = 1e-11
)

func TestVectorsPassK(t *testing.T) {
	v := loadVectors(t)
	if len(v.PassAtK) == 0 || len(v.PassHatK) == 0 {
		t.Fatal("no pass@k vectors")
	}
	for _, c := range v.PassAtK {
		if got := PassAtK(c.N, c.C, c.K); !near(got, c.Want, relExact, 0) {
			t.Errorf("PassAtK(%d, %d, %d) = %.17g, want %.17g", c.N, c.C, c.K, got, c.Want)
		}
	}
	for _, c := range v.PassHatK {
		if got := PassHatK(c.N, c.C, c.K); !near(got, c.Want, relExact, 0) {
			t.Errorf("PassHatK(%d, %d, %d) = %.17g, want %.17g", c.N, c.C, c.K, got, c.Want)
		}
	}
}

func TestVectorsNormal(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.NormPPF {
		if got := NormalQuantile(c.P); !near(got, c.Want, relQuantile, 1e-15) {
			t.Errorf("NormalQuantile(%g) = %.17g, want %.17g", c.P, got, c.Want)
		}
	}
	for _, c := range v.NormCDF {
		if got := NormalCDF(c.X); !near(got, c.Want, relSpecial, 0) {
			t.Errorf("NormalCDF(%g) = %.17g, want %.17g", c.X, got, c.Want)
		}
	}
}

func TestVectorsT(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.TPPF {
		if got := TQuantile(c.P, c.DF); !near(got, c.Want, relQuantile, 1e-15) {
			t.Errorf("TQuantile(%g, %g) = %.17g, want %.17g", c.P, c.DF, got, c.Want)
		}
	}
	for _, c := range v.TCDF {
		if got := TCDF(c.X, c.DF); !near(got, c.Want, relSpecial, 0) {
			t.Errorf("TCDF(%g, %g) = %.17g, want %.17g", c.X, c.DF, got, c.Want)
		}
	}
}

func TestVectorsDescribe(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.Describe {
		xs := v.Samples[c.Sample]
		if got := Mean(xs); !near(got, c.Mean, relExact, 1e-15) {
			t.Errorf("Mean(sample %d) = %.17g, want %.17g", c.Sample, got, c.Mean)
		}
		if got := Variance(xs); !near(got, c.Var, relExact, 1e-15) {
			t.Errorf("Variance(sample %d) = %.17g, want %.17g", c.Sample, got, c.Var)
		}
	}
	for _, c := range v.Intervals {
		xs := v.Samples[c.Sample]
		f := CLT
		if c.Dist == "t" {
			f = TInterval
		}
		m, se, lo, hi := f(xs, c.Level)
		for _, g := range []struct {
			name      string
			got, want float64
		}{{"mean", m, c.Mean}, {"se", se, c.SE}, {"lo", lo, c.Lo}, {"hi", hi, c.Hi}} {
			// The interval ends carry the quantile's tolerance.
			if !near(g.got, g.want, relQuantile, 1e-14) {
				t.Errorf("%s interval(sample %d, level %g) %s = %.17g, want %.17g", c.Dist, c.Sample, c.Level, g.name, g.got, g.want)
			}
		}
	}
	for i, c := range v.Clustered {
		se, g := ClusteredSE(c.Xs, c.Cluster)
		if g != c.Groups || !near(se, c.SE, relExact, 0) {
			t.Errorf("ClusteredSE(case %d) = %.17g, %d; want %.17g, %d", i, se, g, c.SE, c.Groups)
		}
	}
}

func TestVectorsBinomial(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.BinomGreater {
		if got := BinomGreater(c.K, c.N, c.P); !near(got, c.Want, relSpecial, 0) {
			t.Errorf("BinomGreater(%d, %d, %g) = %.17g, want %.17g", c.K, c.N, c.P, got, c.Want)
		}
	}
	for _, c := range v.McNemar {
		if got := McNemar(c.B, c.C); !near(got, c.Want, relSpecial, 0) {
			t.Errorf("McNemar(%d, %d) = %.17g, want %.17g", c.B, c.C, got, c.Want)
		}
		// The sign test is the same binomial test on other counts.
		if got := SignTest(c.B, c.C); !near(got, c.Want, relSpecial, 0) {
			t.Errorf("SignTest(%d, %d) = %.17g, want %.17g", c.B, c.C, got, c.Want)
		}
	}
}

func TestVectorsHolm(t *testing.T) {
	v := loadVectors(t)
	if len(v.Holm) < 5 {
		t.Fatal("too few Holm vectors")
	}
	for _, c := range v.Holm {
		got := Holm(c.Ps)
		for i := range got {
			if !near(got[i], c.Want[i], relExact, 0) {
				t.Errorf("Holm(%v) = %v, want %v", c.Ps, got, c.Want)
				break
			}
		}
	}
}

func TestVectorsPercentile(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.Percentile {
		for i, q := range c.Q {
			if got := Percentile(c.Sorted, q); !near(got, c.Want[i], relExact, 1e-15) {
				t.Errorf("Percentile(len %d, %g) = %.17g, want %.17g", len(c.Sorted), q, got, c.Want[i])
			}
		}
	}
}

// TestVectorsBootstrapEndpoints feeds a fixed list of resample means through
// the same sort-and-percentile step Bootstrap uses and compares the ends
// with numpy.percentile of the same means at NeMo's (α/2, 1−α/2).
func TestVectorsBootstrapEndpoints(t *testing.T) {
	v := loadVectors(t)
	means := slices.Clone(v.BootMeans)
	slices.Sort(means)
	for _, c := range v.BootPercentiles {
		lo, hi := bootstrapEnds(means, c.Level)
		if !near(lo, c.Lo, relExact, 0) || !near(hi, c.Hi, relExact, 0) {
			t.Errorf("level %g: [%.17g, %.17g], numpy [%.17g, %.17g]", c.Level, lo, hi, c.Lo, c.Hi)
		}
	}
}

func TestVectorsDecompose(t *testing.T) {
	v := loadVectors(t)
	for i, c := range v.Decompose {
		b, w, ok := Decompose(c.Items)
		if ok != c.WithinOK || !near(b, c.Between, relExact, 1e-15) || !near(w, c.Within, relExact, 1e-15) {
			t.Errorf("Decompose(case %d) = %.17g, %.17g, %v; want %.17g, %.17g, %v", i, b, w, ok, c.Between, c.Within, c.WithinOK)
		}
	}
	for _, c := range v.MDE {
		if got := MDE(c.SE, c.Alpha, c.Power); !near(got, c.Want, relQuantile, 0) {
			t.Errorf("MDE(%g, %g, %g) = %.17g, want %.17g", c.SE, c.Alpha, c.Power, got, c.Want)
		}
	}
}
