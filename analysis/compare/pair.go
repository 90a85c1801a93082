package compare

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// Metric names per-item values can be paired on.
const (
	MeanReward = "mean_reward" // mean reward over the item's repeats
	Pass1      = "pass@1"      // share of the item's repeats with reward > 0
)

// Item is one item's results on one side, its repeats collapsed.
type Item struct {
	ID       string
	Idx      int64
	Category string
	Expected string
	// Rewards per repeat, in repeat order.
	Rewards []float64
	// Scores per extra scorer ("scorer:exact_match"), per repeat that has
	// it, in repeat order.
	Scores map[string][]float64
	// Extracted is the first repeat's extracted answer; FirstRepeat that
	// repeat's number (for its trajectory).
	Extracted   string
	FirstRepeat int64
}

// Value is the item's per-item value of metric, and whether it has one.
func (it *Item) Value(metric string) (float64, bool) {
	switch {
	case metric == MeanReward:
		return mean(it.Rewards), len(it.Rewards) > 0
	case metric == Pass1:
		if len(it.Rewards) == 0 {
			return 0, false
		}
		n := 0
		for _, r := range it.Rewards {
			if r > 0 {
				n++
			}
		}
		return float64(n) / float64(len(it.Rewards)), true
	case strings.HasPrefix(metric, "scorer:"):
		v := it.Scores[metric]
		return mean(v), len(v) > 0
	}
	return 0, false
}

// Items collapses the scored rows into items by item_id, ordered by
// item_idx then id. A row that ended in infra_error is not a wrong answer
// and is left out (metrics.Scored), as the bundle's statistics leave it
// out: an item keeps its scored repeats, and an item with none is not an
// item here.
func Items(rows []results.Row) []*Item {
	rows = scoredRows(rows)
	order := func(a, b *results.Row) int {
		return cmp.Or(cmp.Compare(a.ItemIdx, b.ItemIdx), strings.Compare(a.ItemID, b.ItemID), cmp.Compare(a.Repeat, b.Repeat))
	}
	idx := make([]int32, len(rows))
	for i := range idx {
		idx[i] = int32(i)
	}
	// Merged results are already in this order; sort only when not.
	if !slices.IsSortedFunc(idx, func(a, b int32) int { return order(&rows[a], &rows[b]) }) {
		slices.SortStableFunc(idx, func(a, b int32) int { return order(&rows[a], &rows[b]) })
	}
	// Sorted, an item's rows are contiguous: one backing array for every
	// item's rewards, no map.
	rewards := make([]float64, len(idx))
	var starts []int
	for j, i := range idx {
		rewards[j] = rows[i].Reward
		if j == 0 || rows[i].ItemID != rows[idx[j-1]].ItemID {
			starts = append(starts, j)
		}
	}
	items := make([]Item, len(starts))
	out := make([]*Item, len(starts))
	for n, start := range starts {
		end := len(idx)
		if n+1 < len(starts) {
			end = starts[n+1]
		}
		r := &rows[idx[start]]
		it := &items[n]
		*it = Item{ID: r.ItemID, Idx: r.ItemIdx, Category: r.Category, Expected: r.Expected,
			Extracted: r.Extracted, FirstRepeat: r.Repeat, Rewards: rewards[start:end:end]}
		for _, i := range idx[start:end] {
			for k, v := range rows[i].Scores {
				if it.Scores == nil {
					it.Scores = map[string][]float64{}
				}
				it.Scores[k] = append(it.Scores[k], v)
			}
		}
		out[n] = it
	}
	return out
}

// scoredRows is rows without those that are not scored; rows itself when
// every row is.
func scoredRows(rows []results.Row) []results.Row {
	for i := range rows {
		if metrics.Scored(&rows[i]) {
			continue
		}
		out := slices.Clone(rows[:i])
		for j := i + 1; j < len(rows); j++ {
			if metrics.Scored(&rows[j]) {
				out = append(out, rows[j])
			}
		}
		return out
	}
	return rows
}

// Paired is two runs' items matched by item_id (content id).
type Paired struct {
	// Base[i] and Cand[i] are the same item, ordered by the baseline's
	// item_idx.
	Base, Cand []*Item
	// Items on each side, and those on one side only.
	NBase, NCand       int
	OnlyBase, OnlyCand int
	// Changed lists paired items whose expected answer differs between
	// the runs (the same content id should mean the same item: normally
	// empty).
	Changed []string
}

// Coverage is paired items over the larger side's items.
func (p *Paired) Coverage() float64 {
	n := max(p.NBase, p.NCand)
	if n == 0 {
		return 0
	}
	return float64(len(p.Base)) / float64(n)
}

// PairRows pairs two runs' rows by item_id.
func PairRows(base, cand []results.Row) *Paired {
	bi, ci := Items(base), Items(cand)
	byID := make(map[string]*Item, len(ci))
	for _, it := range ci {
		byID[it.ID] = it
	}
	p := &Paired{NBase: len(bi), NCand: len(ci)}
	for _, b := range bi {
		c, ok := byID[b.ID]
		if !ok {
			p.OnlyBase++
			continue
		}
		p.Base = append(p.Base, b)
		p.Cand = append(p.Cand, c)
		if b.Expected != c.Expected {
			p.Changed = append(p.Changed, b.ID)
		}
	}
	p.OnlyCand = p.NCand - len(p.Base)
	return p
}

// Values are the paired per-item values of metric on each side; ok is
// false unless every paired item has one on both sides.
func (p *Paired) Values(metric string) (base, cand []float64, ok bool) {
	base = make([]float64, len(p.Base))
	cand = make([]float64, len(p.Cand))
	for i := range p.Base {
		b, okb := p.Base[i].Value(metric)
		c, okc := p.Cand[i].Value(metric)
		if !okb || !okc {
			return nil, nil, false
		}
		base[i], cand[i] = b, c
	}
	return base, cand, len(base) > 0
}

// Clusters numbers the paired items' categories when every paired item
// has one and there are at least two; nil otherwise (no clustering).
func (p *Paired) Clusters() ([]int, int) {
	ids := map[string]int{}
	out := make([]int, len(p.Base))
	for i, it := range p.Base {
		c := it.Category
		if c == "" {
			c = p.Cand[i].Category
		}
		if c == "" {
			return nil, 0
		}
		id, ok := ids[c]
		if !ok {
			id = len(ids)
			ids[c] = id
		}
		out[i] = id
	}
	if len(ids) < 2 {
		return nil, 0
	}
	return out, len(ids)
}

// Resolution is the finest step the paired per-item values bv, cv can
// take, the pseudo-difference of PairedCI's floor: one of k repeats
// changing by the rewards' full range, 1/k for rewards in [0, 1] (0/1
// rewards: one discordant repeat). k is the fewest repeats a paired item
// has on either side (the coarsest step, so the floor errs wide); a value
// outside [0, 1] widens the range to its magnitude.
func (p *Paired) Resolution(bv, cv []float64) float64 {
	k := 0
	for i := range p.Base {
		for _, n := range []int{len(p.Base[i].Rewards), len(p.Cand[i].Rewards)} {
			if n > 0 && (k == 0 || n < k) {
				k = n
			}
		}
	}
	scale := 1.0
	for _, v := range [][]float64{bv, cv} {
		for _, x := range v {
			scale = max(scale, math.Abs(x))
		}
	}
	return scale / float64(max(k, 1))
}

// RepeatDeltas are, per paired item, the differences candidate − baseline
// of metric's per-repeat values, repeat by repeat (repeats are independent
// draws, so any pairing of them is valid), over the repeats both sides
// have. ok is false when some item has fewer than two repeats or the
// metric has no per-repeat values.
func (p *Paired) RepeatDeltas(metric string) ([][]float64, bool) {
	out := make([][]float64, len(p.Base))
	for i := range p.Base {
		b, c := perRepeat(p.Base[i], metric), perRepeat(p.Cand[i], metric)
		k := min(len(b), len(c))
		if k < 2 {
			return nil, false
		}
		d := make([]float64, k)
		for r := range k {
			d[r] = c[r] - b[r]
		}
		out[i] = d
	}
	return out, len(out) > 0
}

func perRepeat(it *Item, metric string) []float64 {
	switch {
	case metric == MeanReward:
		return it.Rewards
	case metric == Pass1:
		out := make([]float64, len(it.Rewards))
		for i, r := range it.Rewards {
			if r > 0 {
				out[i] = 1
			}
		}
		return out
	case strings.HasPrefix(metric, "scorer:"):
		return it.Scores[metric]
	}
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
