package coverage

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShapes checks the non-Beta item shapes by hand and by drawing: at a
// mean of 0.9 the uniform runs over [0.8, 1], so pass@2's truth is
// 1 − E[(1−q)²] = 1 − 0.2²/3; the two-point puts (0.995 − 0.9)/(0.995 −
// 0.4) = 0.1597 of the items at 0.4, so pass@2 is 1 − 0.1597·0.6² −
// 0.8403·0.005²; pass@1's truth is the mean either way, and 20,000 draws
// of each shape average to it within 4 SEs.
func TestShapes(t *testing.T) {
	w := 0.095 / 0.595
	for _, c := range []struct {
		shape string
		want  float64
	}{
		{ShapeUniform, 1 - 0.04/3},
		{ShapeTwoPoint, 1 - w*0.36 - (1-w)*0.005*0.005},
	} {
		cs := Case{Name: c.shape, Items: 20000, Repeats: 4, Mean: 0.9, Shape: c.shape}
		if err := cs.check(); err != nil {
			t.Fatal(err)
		}
		if got, _ := cs.truth("pass@2"); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: pass@2 truth %v, want %v", c.shape, got, c.want)
		}
		if got, _ := cs.truth("pass@1"); got != 0.9 {
			t.Errorf("%s: pass@1 truth %v", c.shape, got)
		}
		p, _ := probs(cs, rand.New(rand.NewPCG(1, 1)))
		sum, sq := 0.0, 0.0
		for _, q := range p {
			sum, sq = sum+q, sq+q*q
		}
		m := sum / float64(len(p))
		se := math.Sqrt((sq/float64(len(p)) - m*m) / float64(len(p)))
		if math.Abs(m-0.9) > 4*se {
			t.Errorf("%s: draws average %v ± %v, want 0.9", c.shape, m, se)
		}
	}
	bad := Case{Name: "x", Items: 50, Repeats: 4, Mean: 0.9, Shape: ShapeUniform, Clusters: 5}
	if bad.check() == nil {
		t.Error("a shape with clusters passes check")
	}
}
