package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// NeMo-Skills (ns eval --output_dir DIR, and the eval-factory images built
// on it) writes DIR/eval-results/<benchmark>/output.jsonl for greedy
// decoding, or output-rs<seed>.jsonl per random seed (<benchmark>:N asks
// for N), one JSON object per problem in dataset order, and metrics.json
// beside them. The per-sample verdict is a field the benchmark's
// evaluator adds: symbolic_correct (math, multichoice), is_correct,
// judge_correct, or strict_eval/loose_eval.follow_all_instructions
// (instruction following); predicted_answer and expected_answer hold the
// answers (nemo_skills/evaluation/metrics).
var skillsOutputRE = regexp.MustCompile(`^output(?:-rs(\d+))?\.jsonl$`)

// skillsVerdicts are the fields that hold a sample's verdict, in the order
// the first one present is the reward.
var skillsVerdicts = []string{"symbolic_correct", "is_correct", "judge_correct", "correct",
	"strict_eval.follow_all_instructions", "loose_eval.follow_all_instructions"}

// ReadSkills reads a NeMo-Skills output folder.
func ReadSkills(dir string) (*Output, error) {
	groups, err := skillsFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no eval-results/<benchmark>/output*.jsonl")
	}
	o := &Output{Aggregate: map[string]float64{}}
	for _, bench := range slices.Sorted(maps.Keys(groups)) {
		for _, path := range groups[bench] {
			ss, err := readSkillsFile(path, bench)
			if err != nil {
				return nil, err
			}
			o.Samples = append(o.Samples, ss...)
			o.Files = append(o.Files, rel(dir, path))
		}
		if err := readSkillsMetrics(filepath.Join(filepath.Dir(groups[bench][0]), "metrics.json"), o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// skillsFiles finds the output files per benchmark folder: the seeds'
// files when there are any (a folder may also hold a greedy output.jsonl
// of an earlier run), else output.jsonl.
func skillsFiles(dir string) (map[string][]string, error) {
	seeded := map[string][]string{}
	greedy := map[string][]string{}
	err := filepath.WalkDir(filepath.Join(dir, "eval-results"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		m := skillsOutputRE.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		bench := filepath.Base(filepath.Dir(path))
		if m[1] != "" {
			seeded[bench] = append(seeded[bench], path)
		} else {
			greedy[bench] = append(greedy[bench], path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for b, ps := range greedy {
		if _, ok := seeded[b]; !ok {
			seeded[b] = ps
		}
	}
	for _, ps := range seeded {
		sort.Strings(ps)
	}
	return seeded, nil
}

func readSkillsFile(path, bench string) ([]Sample, error) {
	var repeat int64
	if m := skillsOutputRE.FindStringSubmatch(filepath.Base(path)); m[1] != "" {
		repeat, _ = strconv.ParseInt(m[1], 10, 64)
	}
	var out []Sample
	idx := int64(0)
	seen := map[string]bool{}
	err := eachJSONL(path, func(_ int, raw []byte, rec map[string]any) error {
		s, err := skillsSample(rec, raw, bench, idx, repeat)
		if err != nil {
			return err
		}
		if seen[s.ItemID] {
			// Two problems with the same text: told apart by position.
			s.ItemID += "@" + strconv.FormatInt(idx, 10)
		}
		seen[s.ItemID] = true
		out = append(out, s)
		idx++
		return nil
	})
	return out, err
}

func skillsSample(rec map[string]any, raw []byte, bench string, idx, repeat int64) (Sample, error) {
	s := Sample{Task: bench, ItemIdx: idx, Repeat: repeat, Scores: map[string]float64{}, Record: string(raw)}
	found := false
	for _, k := range skillsVerdicts {
		v, ok := number(lookup(rec, k))
		if !ok {
			continue
		}
		s.Scores[k] = v
		if !found {
			s.Reward, s.Correct, found = v, binary(v), true
		}
	}
	if !found {
		return s, fmt.Errorf("no verdict field (one of %s): was the output evaluated?", strings.Join(skillsVerdicts, ", "))
	}
	s.Prompt = str(rec, "problem", "question", "prompt")
	s.Response = str(rec, "generation")
	s.Extracted = str(rec, "predicted_answer")
	s.Expected = str(rec, "expected_answer")
	s.ItemID = bench + "/" + skillsItemKey(rec, idx)
	return s, nil
}

// skillsItemKey identifies an item by content: its id field, else a
// digest of its question, else its position.
func skillsItemKey(rec map[string]any, idx int64) string {
	if id := str(rec, "id"); id != "" {
		return id
	}
	if q := str(rec, "problem", "question", "prompt"); q != "" {
		sum := sha256.Sum256([]byte(q))
		return hex.EncodeToString(sum[:8])
	}
	return "item-" + strconv.FormatInt(idx, 10)
}

// readSkillsMetrics reads metrics.json ({benchmark: {mode: {metric:
// value}}}, percentages) when it is there: the aggregates the harness
// itself reported, kept beside the rows nel computes from.
func readSkillsMetrics(path string, o *Output) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var doc map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for bench, modes := range doc {
		for mode, ms := range modes {
			for k, v := range ms {
				if x, ok := number(v); ok {
					o.Aggregate[bench+"/"+mode+"/"+k] = x
				}
			}
		}
	}
	return nil
}

// lookup follows a dotted path through nested objects.
func lookup(rec map[string]any, path string) any {
	var v any = rec
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// str is the first of keys whose value is a string, as text; a number is
// written as JSON.
func str(rec map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := rec[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ""
}
