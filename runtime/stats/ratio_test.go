package stats

import (
	"math"
	"testing"
)

func TestRatioByHand(t *testing.T) {
	// Three prompts with 1, 2 and 3 instructions, following 1, 0 and 3:
	// 4 of 6 instructions (0.667), not the mean of the per-prompt ratios
	// ((1 + 0 + 1)/3 = 0.667 by chance here too, so also check a case
	// where they differ below).
	num := []float64{1, 0, 3}
	den := []float64{1, 2, 3}
	if got := Ratio(num, den); math.Abs(got-4.0/6) > 1e-15 {
		t.Fatalf("Ratio = %v, want 4/6", got)
	}
	// 1 of 1 and 1 of 3: pooled 2/4 = 0.5, mean of ratios (1 + 1/3)/2 = 0.667.
	if got := Ratio([]float64{1, 1}, []float64{1, 3}); got != 0.5 {
		t.Fatalf("Ratio = %v, want the pooled 0.5", got)
	}
	if got := Ratio([]float64{0}, []float64{0}); !math.IsNaN(got) {
		t.Fatalf("Ratio over no denominators = %v, want NaN", got)
	}
	// Delta method by hand: R = 2/3, d̄ = 2, z = (1−2/3, 0−4/3, 3−2)/2 =
	// (1/6, −2/3, 1/2); mean 0; sample variance = (1/36 + 4/9 + 1/4)/2 =
	// (1 + 16 + 9)/72 = 26/72; SE = sqrt(26/72/3).
	r, se, lo, hi := RatioCLT(num, den, 0.95)
	wantSE := math.Sqrt(26.0 / 72 / 3)
	if math.Abs(r-2.0/3) > 1e-15 || math.Abs(se-wantSE) > 1e-15 {
		t.Fatalf("RatioCLT = %v ± %v, want 2/3 ± %v", r, se, wantSE)
	}
	if q := 1.959963984540054; math.Abs(lo-(r-q*se)) > 1e-12 || math.Abs(hi-(r+q*se)) > 1e-12 {
		t.Fatalf("RatioCLT interval [%v, %v]", lo, hi)
	}
}

func TestBootstrapRatio(t *testing.T) {
	// All units with the same ratio: every resample has it.
	lo, hi := BootstrapRatio([]float64{1, 2, 3}, []float64{2, 4, 6}, 500, 7, 0.95)
	if lo != 0.5 || hi != 0.5 {
		t.Fatalf("constant ratio: [%v, %v], want [0.5, 0.5]", lo, hi)
	}
	// Seeded: the same call gives the same interval; it contains the
	// estimate and agrees roughly with the delta method on a larger sample.
	var num, den []float64
	for i := range 400 {
		d := float64(1 + i%4)
		num = append(num, float64(i%3%2)*d)
		den = append(den, d)
	}
	lo1, hi1 := BootstrapRatio(num, den, 4000, 42, 0.95)
	lo2, hi2 := BootstrapRatio(num, den, 4000, 42, 0.95)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatal("BootstrapRatio is not deterministic for a seed")
	}
	r, _, clo, chi := RatioCLT(num, den, 0.95)
	if !(lo1 < r && r < hi1) {
		t.Fatalf("bootstrap [%v, %v] misses the ratio %v", lo1, hi1, r)
	}
	if math.Abs(lo1-clo) > 0.01 || math.Abs(hi1-chi) > 0.01 {
		t.Fatalf("bootstrap [%v, %v] far from delta method [%v, %v]", lo1, hi1, clo, chi)
	}
}
