package harness

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// lm-evaluation-harness with --output_path DIR --log_samples writes, under
// DIR/<model name, sanitised>/, results_<date>.json (the aggregates) and
// one samples_<task>_<date>.jsonl per task (every subtask of a group):
// one JSON object per (document, filter) with doc_id, doc, target,
// arguments, resps, filtered_resps, filter, metrics (the names of the
// metric fields), doc_hash, prompt_hash, target_hash and a field per
// metric (lm_eval/evaluator.py, loggers/evaluation_tracker.py).
var (
	lmSamplesRE = regexp.MustCompile(`^samples_(.+)_(\d{4}-\d{2}-\d{2}T[0-9.-]+)\.jsonl$`)
	lmResultsRE = regexp.MustCompile(`^results_(\d{4}-\d{2}-\d{2}T[0-9.-]+)\.json$`)
)

// ReadLMEval reads lm-evaluation-harness's output folder.
func ReadLMEval(dir string) (*Output, error) {
	o := &Output{Aggregate: map[string]float64{}}
	var samples, res []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch name := d.Name(); {
		case lmSamplesRE.MatchString(name):
			samples = append(samples, path)
		case lmResultsRE.MatchString(name):
			res = append(res, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("found %d results_<date>.json files, expected the one of a single lm_eval run", len(res))
	}
	sort.Strings(samples)
	seen := map[string]string{}
	for _, path := range samples {
		task := lmSamplesRE.FindStringSubmatch(filepath.Base(path))[1]
		if prev, dup := seen[task]; dup {
			return nil, fmt.Errorf("task %s has two samples files (%s, %s): the folder holds more than one lm_eval run", task, prev, path)
		}
		seen[task] = path
		ss, err := readLMSamples(path, task)
		if err != nil {
			return nil, err
		}
		o.Samples = append(o.Samples, ss...)
	}
	if err := readLMResults(res[0], o); err != nil {
		return nil, err
	}
	for _, p := range append(samples, res...) {
		o.Files = append(o.Files, rel(dir, p))
	}
	sort.Strings(o.Files)
	return o, nil
}

// readLMSamples reads one samples file. A document appears once per
// filter; the first filter in the file is the sample's verdict, the
// others' metrics are kept as scores named "<metric>,<filter>".
func readLMSamples(path, task string) ([]Sample, error) {
	byDoc := map[int64]int{}
	var out []Sample
	err := eachJSONL(path, func(_ int, _ []byte, rec map[string]any) error {
		docID, ok := rec["doc_id"].(float64)
		if !ok {
			return fmt.Errorf("no numeric doc_id")
		}
		filter, _ := rec["filter"].(string)
		metrics := lmMetricNames(rec)
		if len(metrics) == 0 {
			return fmt.Errorf("no metric fields (\"metrics\" lists none with a numeric value)")
		}
		if i, again := byDoc[int64(docID)]; again {
			for _, m := range metrics {
				v, _ := number(rec[m])
				out[i].Scores[m+","+filter] = v
			}
			return nil
		}
		s, err := lmSample(rec, task, int64(docID), filter, metrics)
		if err != nil {
			return err
		}
		byDoc[int64(docID)] = len(out)
		out = append(out, s)
		return nil
	})
	return out, err
}

// lmMetricNames are the record's metric fields with a numeric value, in
// the order its "metrics" list gives them.
func lmMetricNames(rec map[string]any) []string {
	names, _ := rec["metrics"].([]any)
	var out []string
	for _, n := range names {
		if s, ok := n.(string); ok {
			if _, ok := number(rec[s]); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func lmSample(rec map[string]any, task string, docID int64, filter string, metrics []string) (Sample, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return Sample{}, err
	}
	hash, _ := rec["doc_hash"].(string)
	if hash == "" {
		hash = "doc-" + strconv.FormatInt(docID, 10)
	}
	reward, _ := number(rec[metrics[0]])
	s := Sample{
		Task:      task,
		ItemID:    task + "/" + hash,
		ItemIdx:   docID,
		Prompt:    lmPrompt(rec["arguments"]),
		Response:  firstString(rec["resps"]),
		Extracted: firstString(rec["filtered_resps"]),
		Reward:    reward,
		Correct:   binary(reward),
		Scores:    map[string]float64{},
		Record:    string(raw),
	}
	s.Expected, _ = rec["target"].(string)
	for _, m := range metrics {
		v, _ := number(rec[m])
		s.Scores[m+","+filter] = v
	}
	return s, nil
}

// lmPrompt is the first request's first argument (the prompt): the logger
// writes arguments as {"gen_args_0": {"arg_0": prompt, "arg_1": kwargs}}.
func lmPrompt(v any) string {
	args, _ := v.(map[string]any)
	first, _ := args["gen_args_0"].(map[string]any)
	switch p := first["arg_0"].(type) {
	case string:
		return p
	case nil:
		return ""
	default:
		b, _ := json.Marshal(p)
		return string(b)
	}
}

// readLMResults reads results_<date>.json's "results": per task, metrics
// keyed "<metric>,<filter>" (and their "_stderr" twins, left out). The
// aggregates are named "<task>/<metric>,<filter>"; the headline of an
// aggregate-only result is the first metric of the first task.
func readLMResults(path string, o *Output) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Results map[string]map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for task, ms := range doc.Results {
		for k, v := range ms {
			x, ok := number(v)
			if !ok || !strings.Contains(k, ",") || strings.Contains(k, "_stderr,") {
				continue
			}
			o.Aggregate[task+"/"+k] = x
		}
	}
	if len(o.Aggregate) == 0 {
		return fmt.Errorf("%s: no metrics under \"results\"", path)
	}
	keys := make([]string, 0, len(o.Aggregate))
	for k := range o.Aggregate {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o.Primary = keys[0]
	return nil
}
