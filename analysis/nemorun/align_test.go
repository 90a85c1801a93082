package nemorun

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
)

// nelRows is a nel run's rows: content ids, dataset indexes, gold answers.
func nelRows(expected ...string) []results.Row {
	var rows []results.Row
	for i, e := range expected {
		rows = append(rows, results.Row{ItemID: fmt.Sprintf("%016x", 0xabc0+i), ItemIdx: int64(i), Expected: e})
	}
	return rows
}

func nemoRows(expected ...string) []results.Row {
	var rows []results.Row
	for i, e := range expected {
		for rep := range 2 {
			rows = append(rows, results.Row{ItemID: ItemID(int64(i)), ItemIdx: int64(i), Repeat: int64(rep), Expected: e})
		}
	}
	return rows
}

var twelve = []string{"18", "3", "70000", "540", "20", "64", "260", "160", "45", "460", "366", "694"}

func TestPairByIndex(t *testing.T) {
	nemo := nemoRows(append(append([]string{}, twelve...), "99")...) // index 12: not in the nel run
	nemo[0].Expected = " 18 "                                        // NeMo wrote it with spaces
	nel := nelRows(twelve...)
	got, how, err := Pair(nemo, nel)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		want := ItemID(12)
		if r.ItemIdx < 12 {
			want = nel[r.ItemIdx].ItemID
		}
		if r.ItemID != want {
			t.Errorf("row %d (index %d): id %s, want %s", i, r.ItemIdx, r.ItemID, want)
		}
	}
	if nemo[0].ItemID != ItemID(0) {
		t.Errorf("Pair changed its input")
	}
	if !strings.Contains(how, "the 12 shared items' expected answers all agree") {
		t.Errorf("how: %q", how)
	}
}

func TestPairRefuses(t *testing.T) {
	shifted := append([]string{"1"}, twelve[:11]...) // the NeMo run's data starts one item later
	dupIdx := nelRows(twelve...)
	dupIdx[1].ItemIdx = 0
	tests := []struct {
		name      string
		nemo, nel []results.Row
		want      string
	}{
		{"another order", nemoRows(shifted...), nelRows(twelve...),
			`12 of 12 shared indexes expect a different answer (index 0: NeMo expects "1", nel "18"; index 1: NeMo expects "18", nel "3"; index 2: NeMo expects "3", nel "70000")`},
		{"one answer differs", nemoRows(append(append([]string{}, twelve[:11]...), "695")...), nelRows(twelve...),
			`1 of 12 shared indexes expect a different answer (index 11: NeMo expects "695", nel "694")`},
		// Multiple-choice letters: 8 items, balanced over A-D, agree by
		// chance with probability 0.25^8 ≈ 1.5e-05.
		{"answers too alike", nemoRows("A", "B", "C", "D", "A", "B", "C", "D"), nelRows("A", "B", "C", "D", "A", "B", "C", "D"),
			"would agree by chance with probability 1.5e-05"},
		{"nothing shared", nemoRows("1"), nelRows(), "no NeMo problem_idx is an item_idx of the nel run"},
		{"an index twice", nemoRows(twelve...), dupIdx, "the nel run has two items at dataset index 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Pair(tt.nemo, tt.nel)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pair: %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}

// Enough multiple-choice items do prove the mapping: 12 balanced letters
// agree by chance with probability 0.25^12 ≈ 6e-08 < 1e-6.
func TestPairManyLetters(t *testing.T) {
	letters := strings.Split("ABCDABCDABCD", "")
	if _, _, err := Pair(nemoRows(letters...), nelRows(letters...)); err != nil {
		t.Fatal(err)
	}
}
