package stats

import "math"

// AdjustedPaired is the centre and standard error of the adjusted interval
// on a mean paired difference: n real differences of mean m and population
// variance v, plus two pseudo-differences +h and −h. The centre is
// Σd/(n+2) and the standard error √(var_pop(d')/(n+2)) over the n+2.
//
// For 0/1 outcomes with h = 1 this is Bonett & Price's (2012) adjusted
// Wald interval for paired proportions: one discordant pair added each
// way, p̃12 = (n12+1)/(n+2), p̃21 = (n21+1)/(n+2), centre p̃21 − p̃12 and
// var_pop(d') = p̃12 + p̃21 − (p̃21 − p̃12)². Its point is that two runs
// agreeing on every item (v = 0) still get a standard error, √2·h/(n+2),
// instead of the zero-width [0, 0] that no finite sample justifies; with
// item means of k repeats h = 1/k adds one discordant repeat each way
// (the finest difference the data can show).
func AdjustedPaired(n, m, v, h float64) (center, se float64) {
	sum := n * m
	sq := n*(v+m*m) + 2*h*h // Σd² over the real and the pseudo-differences
	center = sum / (n + 2)
	vp := max(0, sq/(n+2)-center*center)
	return center, math.Sqrt(vp / (n + 2))
}
