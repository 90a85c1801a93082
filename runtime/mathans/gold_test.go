package mathans

import (
	"github.com/nel-eval/nel/internal/sharedtest"

	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"
)

type mathRow struct {
	Problem  string `json:"problem"`
	Solution string `json:"solution"`
	Answer   string `json:"answer"`
}

// math500Rows reads ../shared/datasets/math500/test.jsonl (relative to the
// module root); the test skips when the shared data is absent.
func math500Rows(tb testing.TB) []mathRow {
	tb.Helper()
	path := sharedtest.Datasets(tb, "math500", "test.jsonl")
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var rows []mathRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var r mathRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if len(rows) != 500 {
		tb.Fatalf("%s: %d rows, want 500", path, len(rows))
	}
	return rows
}

// TestGoldSelf: every gold answer equals the last \boxed{} of its own
// solution and itself.
func TestGoldSelf(t *testing.T) {
	rows := math500Rows(t)
	bad := 0
	for i, r := range rows {
		ex, how := Extract(r.Solution)
		if how != "boxed" {
			t.Errorf("row %d: no \\boxed{} found in the solution (how %q)", i, how)
		}
		if ok, why := EquivalentWhy(ex, r.Answer); !ok {
			bad++
			t.Errorf("row %d: solution's %q vs answer %q: %s", i, ex, r.Answer, why)
		}
		if !Equivalent(r.Answer, r.Answer) {
			t.Errorf("row %d: answer %q not equivalent to itself", i, r.Answer)
		}
	}
	if bad > 0 {
		t.Errorf("%d/500 gold answers differ from their solutions", bad)
	}
}

// TestGoldCrossPairs compares every two distinct gold answers: an
// equivalence must be a genuine one, i.e. the normalised strings agree or
// both are numbers of equal value.
func TestGoldCrossPairs(t *testing.T) {
	rows := math500Rows(t)
	seen := map[string]bool{}
	var golds []string
	for _, r := range rows {
		if !seen[r.Answer] {
			seen[r.Answer] = true
			golds = append(golds, r.Answer)
		}
	}
	slices.Sort(golds)
	equal := 0
	for i, a := range golds {
		for _, b := range golds[i+1:] {
			ok := Equivalent(a, b)
			if ok != Equivalent(b, a) {
				t.Errorf("asymmetric: %q vs %q", a, b)
			}
			if !ok {
				continue
			}
			equal++
			na, nb := Normalize(a), Normalize(b)
			if na == nb {
				t.Logf("equivalent (same normal form %q): %q, %q", na, a, b)
				continue
			}
			va, ok1 := values(na)
			vb, ok2 := values(nb)
			if !ok1 || !ok2 || !slices.Equal(va, vb) {
				t.Errorf("unexpected equivalence: %q (%q) vs %q (%q)", a, na, b, nb)
				continue
			}
			t.Logf("equivalent (same value): %q, %q", a, b)
		}
	}
	t.Logf("%d distinct gold answers, %d equivalent pairs", len(golds), equal)
}

// values evaluates a number or a bare list of numbers (a solution set) to
// its sorted values, rounded to 9 significant digits.
func values(s string) ([]float64, bool) {
	var out []float64
	for _, p := range splitTop(s, ",") {
		n, ok := parseExpr(p)
		if !ok {
			return nil, false
		}
		vs := map[string]bool{}
		vars(n, vs)
		v := eval(n, nil)
		if len(vs) > 0 || imag(v) != 0 || !finite(v) {
			return nil, false
		}
		f, _ := strconv.ParseFloat(strconv.FormatFloat(real(v), 'g', 9, 64), 64)
		out = append(out, f)
	}
	slices.Sort(out)
	return out, true
}

// BenchmarkEquivalent scores each MATH-500 solution's boxed answer against
// the gold answer (extraction included).
func BenchmarkEquivalent(b *testing.B) {
	rows := math500Rows(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := rows[i%len(rows)]
		ex, _ := Extract(r.Solution)
		if !Equivalent(ex, r.Answer) {
			b.Fatalf("%q vs %q", ex, r.Answer)
		}
	}
}
