package metrics

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nel-eval/nel/runtime/results"
)

// harnessOf records in b the peer harness that produced the rows, from the
// results' metadata (nel-run ingest writes it). An aggregate-only result
// gets the harness's own primary score as its headline, marked as such,
// with no interval: there are no items to compute one from.
func harnessOf(b *Bundle, meta map[string]string) {
	raw := meta[results.MetaHarness]
	if raw == "" {
		return
	}
	h := &Harness{}
	if err := json.Unmarshal([]byte(raw), h); err != nil {
		b.Notes = append(b.Notes, fmt.Sprintf("the harness metadata does not parse (%v)", err))
		return
	}
	var agg struct {
		Primary string             `json:"primary"`
		Scores  map[string]float64 `json:"scores"`
	}
	if s := meta[results.MetaHarnessScores]; s != "" {
		if err := json.Unmarshal([]byte(s), &agg); err != nil {
			b.Notes = append(b.Notes, fmt.Sprintf("the harness's aggregate scores do not parse (%v)", err))
		}
	}
	h.Primary, h.Scores = agg.Primary, agg.Scores
	if len(h.Scores) == 0 {
		h.Scores = nil
	}
	h.AggregateOnly = meta[results.MetaAggregateOnly] == "true"
	b.Harness = h
	if !h.AggregateOnly {
		note := fmt.Sprintf("run by the %s harness in %s: it chose the items, in its own order (max_problems takes its first ones; shuffle_seed does not apply), and its own per-item verdicts are the harness:* scores", h.Kind, h.Image)
		if h.Kind == "lm-eval" {
			note += "; max_problems is lm_eval's --limit, which applies to each task of a group"
		}
		b.Notes = append(b.Notes, note)
		return
	}
	b.Binary, b.Correct, b.Variance = false, nil, nil
	b.Metrics = nil
	names := make([]string, 0, len(h.Scores))
	for k := range h.Scores {
		names = append(names, k)
	}
	slices.Sort(names)
	if i := slices.Index(names, h.Primary); i > 0 {
		names = append(append([]string{h.Primary}, names[:i]...), names[i+1:]...)
	}
	for _, k := range names {
		v := h.Scores[k]
		b.Metrics = append(b.Metrics, Score{Metric: "harness:" + k, Value: &v})
	}
	if len(b.Metrics) > 0 {
		b.Headline = b.Metrics[0]
	}
	b.Notes = slices.DeleteFunc(b.Notes, func(n string) bool { return n == noRowsNote })
	b.Notes = append(b.Notes, fmt.Sprintf("aggregate-only: %s wrote no per-item results, so the scores are the harness's own and no interval, pass@k or paired comparison can be computed", h.Kind))
}
