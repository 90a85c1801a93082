package metrics_test

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// An Accumulator told the rows come sorted gives Compute's bundle for
// rows sorted by item; its exemplar keys are the failed exemplars
// without an error_message of their own.
func TestAccumulatorSorted(t *testing.T) {
	var rows []results.Row
	for i := range 40 {
		for rep := range 3 {
			r := row(string(rune('A'+i%26))+string(rune('a'+i/26)), int64(i), int64(rep), float64((i+rep)%2), []string{"x", "y"}[i%2])
			switch (i + rep) % 7 {
			case 0:
				r.ErrorCategory, r.Outcome = "timeout", "infra_error"
			case 3:
				r.ErrorCategory, r.Outcome, r.Reward = "format_error", "model_error", 0
				if i%3 == 0 {
					r.ErrorMessage = "own message"
				}
			}
			rows = append(rows, r)
		}
	}
	errs := map[metrics.RowKey]string{}
	for _, r := range rows {
		if r.ErrorCategory != "" {
			errs[metrics.RowKey{ItemID: r.ItemID, Repeat: r.Repeat}] = "trajectory error of " + r.ItemID
		}
	}
	in := metrics.Input{Rows: rows, Meta: meta, Errors: errs, Resamples: 200}
	want := metrics.Compute(in)

	acc := metrics.NewAccumulator(nil, 0)
	acc.Sorted()
	for i := range rows {
		acc.Add(&rows[i])
	}
	keys := acc.ExemplarKeys()
	got := acc.Bundle(metrics.Input{Meta: meta, Errors: errs, Resamples: 200})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sorted Accumulator's bundle differs from Compute's:\n%+v\n%+v", got, want)
	}
	if got.Items != 40 || got.Validity.InfraErrors == 0 || got.Failures.Failed == 0 {
		t.Fatalf("items %d, infra %d, model errors %d: the test rows lack what they should hold", got.Items, got.Validity.InfraErrors, got.Failures.Failed)
	}
	var wantKeys []metrics.RowKey
	for _, fc := range append(want.Validity.Classes, want.Failures.Categories...) {
		for _, e := range fc.Exemplars {
			if e.Error != "own message" {
				wantKeys = append(wantKeys, metrics.RowKey{ItemID: e.ItemID, Repeat: e.Repeat})
			}
		}
	}
	cmpKey := func(a, b metrics.RowKey) int {
		return cmp.Or(strings.Compare(a.ItemID, b.ItemID), cmp.Compare(a.Repeat, b.Repeat))
	}
	slices.SortFunc(keys, cmpKey)
	slices.SortFunc(wantKeys, cmpKey)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("exemplar keys %v, want %v", keys, wantKeys)
	}
}
