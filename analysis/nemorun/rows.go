package nemorun

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/results"
)

// jsonRow is the part of a results.jsonl row that nel reads.
type jsonRow struct {
	ProblemIdx     *int64             `json:"problem_idx"`
	Repeat         int64              `json:"repeat"`
	Reward         *float64           `json:"reward"`
	ScorerRewards  map[string]float64 `json:"scorer_rewards"`
	Extracted      json.RawMessage    `json:"extracted_answer"`
	Expected       json.RawMessage    `json:"expected_answer"`
	ScoringDetails map[string]any     `json:"scoring_details"`
	Metadata       map[string]any     `json:"metadata"`
	LatencyMS      float64            `json:"latency_ms"`
}

// ItemID is the item id a NeMo row has until Pair maps it to a nel
// content id: NeMo knows an item by its dataset index only.
func ItemID(problemIdx int64) string { return "nemo:" + strconv.FormatInt(problemIdx, 10) }

// readRows reads a results.jsonl. A later row for the same (problem_idx,
// repeat) replaces an earlier one, as NeMo's own compare and merge do. A
// line that does not parse is an error naming its line.
func readRows(path string) ([]results.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	type key struct{ idx, rep int64 }
	at := map[key]int{}
	var rows []results.Row
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var j jsonRow
		if err := json.Unmarshal(text, &j); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if j.ProblemIdx == nil || j.Reward == nil {
			return nil, fmt.Errorf("%s:%d: a NeMo Evaluator result row needs problem_idx and reward", path, line)
		}
		r := toRow(&j)
		k := key{r.ItemIdx, r.Repeat}
		if i, ok := at[k]; ok {
			rows[i] = r
			continue
		}
		at[k] = len(rows)
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}

func toRow(j *jsonRow) results.Row {
	r := results.Row{
		Benchmark: "", ItemID: ItemID(*j.ProblemIdx), ItemIdx: *j.ProblemIdx, Repeat: j.Repeat,
		Reward: *j.Reward, Extracted: text(j.Extracted), Expected: text(j.Expected), LatencyMS: j.LatencyMS,
		Attempts: 1, Category: str(j.Metadata, "category"),
	}
	if r.Category == "" {
		r.Category = str(j.ScoringDetails, "category")
	}
	if len(j.ScorerRewards) > 0 {
		r.Scores = j.ScorerRewards
	}
	if r.Reward == 0 || r.Reward == 1 {
		c := r.Reward == 1
		r.Correct = &c
	}
	r.ErrorCategory = str(j.ScoringDetails, "error_category")
	r.Outcome = string(Outcome(r.ErrorCategory))
	r.ErrorMessage = str(j.ScoringDetails, "error")
	return r
}

// Outcome is the nel outcome of a NeMo error_category. NeMo scores every
// failure as reward 0; nel scores only the model's own failures and
// leaves infrastructure out (DESIGN §6.7), so the categories are sorted
// by whose failure they are:
//
//   - none → scored;
//   - graceful (an unusable answer), context_window_exceeded,
//     budget_exceeded, turn_budget_exhausted (the model ran out of its
//     budget), refusal, format_error → model_error;
//   - infra_error, system, solve_timeout, rate_limit, model_timeout,
//     server_error, model_error (NeMo's: HTTP 400 and other client
//     errors) and any other → infra_error.
func Outcome(category string) failure.Outcome {
	switch category {
	case "":
		return failure.Scored
	case "graceful", "context_window_exceeded", "budget_exceeded", "turn_budget_exhausted", "refusal", "format_error":
		return failure.ModelError
	}
	return failure.InfraError
}

// text is a JSON answer as text: a string as it is, null as "", anything
// else (a number, a list) as its JSON.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func str(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// sortRows puts rows in merge order: item index, then repeat.
func sortRows(rows []results.Row) {
	slices.SortFunc(rows, func(a, b results.Row) int {
		return cmp.Or(cmp.Compare(a.ItemIdx, b.ItemIdx), cmp.Compare(a.Repeat, b.Repeat))
	})
}

// readSharded reads a sharded NeMo run that `nel eval merge` has not
// merged: every shard_<i>/ is a run folder; a benchmark's rows are the
// union of its shards' rows. A missing shard (by the bundles' own
// config.shard.total, else the highest index seen) is an error: an
// incomplete run must not pass for a complete one.
func readSharded(dir string, shards map[int]string) ([]*Run, error) {
	type acc struct {
		run    *Run
		bundle *bundleFile
		rows   []results.Row
		seen   map[[2]int64]int
	}
	byName := map[string]*acc{}
	total := 0
	for i, sd := range shards {
		runs, err := Read(sd)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		total = max(total, i+1)
		for _, r := range runs {
			b, _ := readBundle(bundles(r.Path)[0]) // Read has read it
			if b.Config.Shard != nil {
				total = max(total, b.Config.Shard.Total)
			}
			a := byName[r.Name]
			if a == nil {
				a = &acc{run: r, bundle: b, seen: map[[2]int64]int{}}
				byName[r.Name] = a
			}
			for _, row := range r.Rows {
				k := [2]int64{row.ItemIdx, row.Repeat}
				if at, ok := a.seen[k]; ok {
					a.rows[at] = row
					continue
				}
				a.seen[k] = len(a.rows)
				a.rows = append(a.rows, row)
			}
		}
	}
	var missing []string
	for i := range total {
		if _, ok := shards[i]; !ok {
			missing = append(missing, shardPrefix+strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: a sharded NeMo Evaluator run of %d shards is incomplete: %s missing", dir, total, strings.Join(missing, ", "))
	}
	var out []*Run
	for _, a := range byName {
		r := a.run
		r.Path, r.Shards = dir, total
		r.finish(a.bundle, a.rows, fmt.Sprintf("merged by nel from %d NeMo Evaluator shards (shard_0 … shard_%d), not by nel eval merge", total, total-1))
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Run) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
