package results

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// duckOut is what testdata/duckdb/read.mjs prints for one file.
type duckOut struct {
	File    string `json:"file"`
	Columns []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Rows        int64             `json:"rows"`
	Metadata    map[string]string `json:"metadata"`
	Aggregates  map[string]any    `json:"aggregates"`
	AvgReward   float64           `json:"avg_reward"`
	NullCorrect int64             `json:"null_correct"`
	TrueCorrect int64             `json:"true_correct"`
	ScoreSums   map[string]struct {
		Sum   float64 `json:"sum"`
		Count int64   `json:"count"`
	} `json:"score_sums"`
	ExactMatchSum float64             `json:"exact_match_sum"`
	EmptyScores   int64               `json:"empty_scores"`
	Head          []map[string]string `json:"head"`
	Nulls         map[string]int64    `json:"nulls"`
}

// readWithDuckDB runs read.mjs on files.
func readWithDuckDB(t *testing.T, files ...string) []duckOut {
	t.Helper()
	out := testenv.DuckDBRead(t, files...)
	var res []duckOut
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var d duckOut
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("decode read.mjs output: %v\n%s", err, out)
		}
		res = append(res, d)
	}
	if len(res) != len(files) {
		t.Fatalf("read.mjs printed %d results for %d files", len(res), len(files))
	}
	return res
}

// duckRows returns n rows for the DuckDB check: the round-trip sample with
// finite scores (DuckDB sums would turn +Inf into a string) and a first row
// with multi-line, quoted, 1 MiB text.
func duckRows(n int) []Row {
	rows := sampleRows(n)
	for i := range rows {
		if _, ok := rows[i].Scores["z"]; ok {
			rows[i].Scores["z"] = 2.5
		}
	}
	rows[0].Extracted = strings.Repeat("«réponse»\n\"42\"\t", 1<<20/20)
	return rows
}

// TestDuckDBReads checks our files with a real DuckDB: the same rows,
// values, types and metadata we wrote, computed here from the input.
func TestDuckDBReads(t *testing.T) {
	testenv.DuckDBReader(t) // before the work, not after it
	dir := t.TempDir()
	rowsPath := filepath.Join(dir, "results.parquet")
	trajPath := filepath.Join(dir, "trajectories.parquet")
	const n = 70_000 // > 64Ki: two row groups
	rows := duckRows(n)
	ts := sampleTrajectories(2000)
	ts[1].Response = strings.Repeat("línea\r\n'x' \"y\" ", 1<<16)
	meta := map[string]string{
		MetaRecipeHash: "sha256:0123",
		MetaBenchmark:  "gsm8k",
		MetaShard:      "2/8",
		MetaSimulated:  "true",
		"note":         "ünïcödé, \"quotes\"\nand a newline",
	}
	if err := WriteRows(rowsPath, rows, meta); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrajectories(trajPath, ts, meta); err != nil {
		t.Fatal(err)
	}
	if rdr, err := file.OpenParquetFile(rowsPath, false); err != nil {
		t.Fatal(err)
	} else {
		if rdr.NumRowGroups() != 2 {
			t.Errorf("%d row groups, want 2", rdr.NumRowGroups())
		}
		rdr.Close()
	}

	got := readWithDuckDB(t, rowsPath, trajPath)
	r, tr := got[0], got[1]

	t.Run("rows", func(t *testing.T) {
		checkColumns(t, r, []string{
			"recipe_hash VARCHAR", "benchmark VARCHAR", "item_id VARCHAR", "item_idx BIGINT", "repeat BIGINT",
			"category VARCHAR", "reward DOUBLE", "correct BOOLEAN", "extracted VARCHAR", "expected VARCHAR",
			"finish_reason VARCHAR", "prompt_tokens BIGINT", "completion_tokens BIGINT", "reasoning_tokens BIGINT",
			"latency_ms DOUBLE", "attempts BIGINT", "error_category VARCHAR", "seed BIGINT", "scores MAP(VARCHAR, DOUBLE)",
			"outcome VARCHAR", "error_message VARCHAR", "model VARCHAR",
		})
		// category is NULL where a row has none (not ''); no other text
		// column has NULLs.
		var noCategory int64
		for _, row := range rows {
			if row.Category == "" {
				noCategory++
			}
		}
		if noCategory == 0 || r.Nulls["category"] != noCategory {
			t.Errorf("DuckDB sees %d NULL categories, want %d", r.Nulls["category"], noCategory)
		}
		for col, n := range r.Nulls {
			if col != "category" && n != 0 {
				t.Errorf("DuckDB sees %d NULLs in %s, want none", n, col)
			}
		}
		checkMeta(t, r, withRows(meta, n))
		if r.Rows != n {
			t.Errorf("DuckDB sees %d rows, want %d", r.Rows, n)
		}
		var sum float64
		var nulls, trues, empty int64
		scores := map[string]float64{}
		counts := map[string]int64{}
		for _, row := range rows {
			sum += row.Reward
			switch {
			case row.Correct == nil:
				nulls++
			case *row.Correct:
				trues++
			}
			if len(row.Scores) == 0 {
				empty++
			}
			for k, v := range row.Scores {
				scores[k] += v
				counts[k]++
			}
		}
		if mean := sum / n; math.Abs(r.AvgReward-mean) > 1e-12 {
			t.Errorf("DuckDB avg(reward) = %.17g, want %.17g", r.AvgReward, mean)
		}
		if r.NullCorrect != nulls || r.TrueCorrect != trues {
			t.Errorf("DuckDB correct: %d null, %d true; want %d, %d", r.NullCorrect, r.TrueCorrect, nulls, trues)
		}
		if r.EmptyScores != empty {
			t.Errorf("DuckDB sees %d empty score maps, want %d", r.EmptyScores, empty)
		}
		if len(r.ScoreSums) != len(scores) {
			t.Errorf("DuckDB score keys %v, want %v", r.ScoreSums, scores)
		}
		for k, want := range scores {
			g := r.ScoreSums[k]
			if g.Count != counts[k] || math.Abs(g.Sum-want) > 1e-9 {
				t.Errorf("DuckDB scores[%q]: sum %v over %d, want %v over %d", k, g.Sum, g.Count, want, counts[k])
			}
		}
		if r.ExactMatchSum != scores["scorer:exact_match"] {
			t.Errorf("DuckDB map_extract(scores, 'scorer:exact_match') sums to %v, want %v", r.ExactMatchSum, scores["scorer:exact_match"])
		}
		// Every column, by name, independently of the writer's table.
		text := map[string]func(Row) string{
			"recipe_hash": func(r Row) string { return r.RecipeHash }, "benchmark": func(r Row) string { return r.Benchmark },
			"item_id": func(r Row) string { return r.ItemID }, "category": func(r Row) string { return r.Category },
			"extracted": func(r Row) string { return r.Extracted }, "expected": func(r Row) string { return r.Expected },
			"finish_reason": func(r Row) string { return r.FinishReason }, "error_category": func(r Row) string { return r.ErrorCategory },
			"outcome": func(r Row) string { return r.Outcome }, "error_message": func(r Row) string { return r.ErrorMessage },
			"model": func(r Row) string { return r.Model },
		}
		ints := map[string]func(Row) int64{
			"item_idx": func(r Row) int64 { return r.ItemIdx }, "repeat": func(r Row) int64 { return r.Repeat },
			"prompt_tokens": func(r Row) int64 { return r.PromptTokens }, "completion_tokens": func(r Row) int64 { return r.CompletionTokens },
			"reasoning_tokens": func(r Row) int64 { return r.ReasoningTokens }, "attempts": func(r Row) int64 { return r.Attempts },
			"seed": func(r Row) int64 { return r.Seed },
		}
		floats := map[string]func(Row) float64{
			"reward": func(r Row) float64 { return r.Reward }, "latency_ms": func(r Row) float64 { return r.LatencyMS },
		}
		checkAggregates(t, r, rows, text, ints, floats)
	})

	t.Run("trajectories", func(t *testing.T) {
		checkColumns(t, tr, []string{
			"recipe_hash VARCHAR", "benchmark VARCHAR", "item_id VARCHAR", "item_idx BIGINT", "repeat BIGINT",
			"request VARCHAR", "response VARCHAR", "reasoning VARCHAR", "scoring_details VARCHAR", "error VARCHAR",
			"model VARCHAR", "retries BIGINT", "latency_ms DOUBLE", "judge_calls VARCHAR",
		})
		checkMeta(t, tr, withRows(meta, len(ts)))
		if tr.Rows != int64(len(ts)) {
			t.Errorf("DuckDB sees %d rows, want %d", tr.Rows, len(ts))
		}
		text := map[string]func(Trajectory) string{
			"recipe_hash": func(t Trajectory) string { return t.RecipeHash }, "benchmark": func(t Trajectory) string { return t.Benchmark },
			"item_id": func(t Trajectory) string { return t.ItemID }, "request": func(t Trajectory) string { return t.Request },
			"response": func(t Trajectory) string { return t.Response }, "reasoning": func(t Trajectory) string { return t.Reasoning },
			"scoring_details": func(t Trajectory) string { return t.ScoringDetails }, "error": func(t Trajectory) string { return t.Error },
			"model": func(t Trajectory) string { return t.Model }, "judge_calls": func(t Trajectory) string { return t.JudgeCalls },
		}
		ints := map[string]func(Trajectory) int64{
			"item_idx": func(t Trajectory) int64 { return t.ItemIdx }, "repeat": func(t Trajectory) int64 { return t.Repeat },
			"retries": func(t Trajectory) int64 { return t.Retries },
		}
		floats := map[string]func(Trajectory) float64{
			"latency_ms": func(t Trajectory) float64 { return t.LatencyMS },
		}
		checkAggregates(t, tr, ts, text, ints, floats)
	})
}

func checkColumns(t *testing.T, d duckOut, want []string) {
	t.Helper()
	var got []string
	for _, c := range d.Columns {
		got = append(got, c.Name+" "+c.Type)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("DuckDB columns:\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

func checkMeta(t *testing.T, d duckOut, want map[string]string) {
	t.Helper()
	if len(d.Metadata) != len(want) {
		t.Errorf("DuckDB metadata %q, want %q", d.Metadata, want)
	}
	for k, v := range want {
		if d.Metadata[k] != v {
			t.Errorf("DuckDB metadata[%q] = %q, want %q", k, d.Metadata[k], v)
		}
	}
}

// checkAggregates compares DuckDB's per-column sums (byte lengths for
// text) and first rows with the same computed from items.
func checkAggregates[T any](t *testing.T, d duckOut, items []T, text map[string]func(T) string, ints map[string]func(T) int64, floats map[string]func(T) float64) {
	t.Helper()
	if len(d.Aggregates) != len(text)+len(ints)+len(floats) {
		t.Errorf("DuckDB aggregated %d columns, want %d: %v", len(d.Aggregates), len(text)+len(ints)+len(floats), d.Aggregates)
	}
	for name, get := range text {
		var want int64
		for _, it := range items {
			want += int64(len(get(it)))
		}
		if got := d.Aggregates["len:"+name]; got != strconv.FormatInt(want, 10) {
			t.Errorf("DuckDB sum(strlen(%s)) = %v, want %d", name, got, want)
		}
		for i, h := range d.Head {
			if g, w := h[name], get(items[i]); g != w {
				t.Errorf("DuckDB row %d %s = %.80q, want %.80q", i, name, g, w)
			}
		}
	}
	for name, get := range ints {
		var want int64
		for _, it := range items {
			want += get(it)
		}
		if got := d.Aggregates["sum:"+name]; got != strconv.FormatInt(want, 10) {
			t.Errorf("DuckDB sum(%s) = %v, want %d", name, got, want)
		}
	}
	for name, get := range floats {
		var want float64
		for _, it := range items {
			want += get(it)
		}
		got, ok := d.Aggregates["sum:"+name].(float64)
		if !ok || math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("DuckDB sum(%s) = %v, want %v", name, d.Aggregates["sum:"+name], want)
		}
	}
	if len(d.Head) != min(3, len(items)) {
		t.Errorf("DuckDB head has %d rows", len(d.Head))
	}
}
