package harness

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/failure"
)

// VLMEvalKit's run.py --work-dir DIR --model M --data D writes its run into
// DIR/M/<eval id>/ (and links the files from DIR/M/): the predictions
// M_D.<PRED_FORMAT> (one row per item: the dataset's columns without the
// image, plus prediction), then what the dataset's evaluate writes: for
// multiple-choice datasets M_D_<judge>_result.<PRED_FORMAT>, the rows
// with a hit (0/1) and a match log per item (per main item of a circular
// group for MMBench: its hit covers every rotation), and M_D_acc.csv
// (accuracy per split and category); other datasets write their own
// scores as M_D_<metric>.csv (vlmeval/smp/file.py,
// vlmeval/dataset/image_mcq.py, utils/multiple_choice.py, image_yorn.py).
// The job sets PRED_FORMAT=tsv: pandas' to_csv with every field quoted,
// missing cells empty.
const (
	// VLMEvalKitModel is the name the job registers the model under,
	// which starts every file name.
	VLMEvalKitModel = "nel"
	// VLMEvalKitJudge is the judge the job runs with: rule-based matching,
	// which names the per-item results file.
	VLMEvalKitJudge = "exact_matching"
	// vlmFailed starts the prediction of an item VLMEvalKit's API model
	// gave up on (BaseAPI.fail_msg, vlmeval/constant.py's FAIL_MSG).
	vlmFailed = "Failed to obtain answer"
)

// ReadVLMEvalKit reads VLMEvalKit's work dir for dataset: a row per item
// where it wrote per-item hits, aggregate-only where it wrote scores only.
func ReadVLMEvalKit(dir, dataset string) (*Output, error) {
	if dataset == "" {
		return nil, fmt.Errorf("no dataset: VLMEvalKit names its files by it")
	}
	stem := VLMEvalKitModel + "_" + dataset
	files, err := vlmFiles(dir, stem)
	if err != nil {
		return nil, err
	}
	pred, ok := files[stem+".tsv"]
	if !ok {
		if _, xlsx := files[stem+".xlsx"]; xlsx {
			return nil, fmt.Errorf("%s.xlsx but no %s.tsv: this VLMEvalKit predates PRED_FORMAT (September 2025); use a newer image", stem, stem)
		}
		return nil, fmt.Errorf("no predictions %s.tsv: VLMEvalKit did not run %s (its log says why)", stem, dataset)
	}
	o := &Output{Aggregate: map[string]float64{}, Files: []string{rel(dir, pred)}}
	if res, ok := files[stem+"_"+VLMEvalKitJudge+"_result.tsv"]; ok {
		if o.Samples, err = readVLMResults(res, dataset); err != nil {
			return nil, err
		}
		o.Files = append(o.Files, rel(dir, res))
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".csv") {
			continue
		}
		metric := strings.TrimSuffix(strings.TrimPrefix(name, stem+"_"), ".csv")
		if err := readVLMScores(files[name], metric, o); err != nil {
			return nil, err
		}
		o.Files = append(o.Files, rel(dir, files[name]))
	}
	if len(o.Aggregate) == 0 {
		return nil, fmt.Errorf("no scores (%s_<metric>.csv): VLMEvalKit did not evaluate %s (its log says why; test splits without answers, for one)", stem, dataset)
	}
	o.Primary = vlmPrimary(o.Aggregate)
	sort.Strings(o.Files)
	return o, nil
}

// vlmFiles finds the files of one run by name: regular files only (the
// links run.py makes beside the run folder are skipped); a name found
// twice means the folder holds two runs.
func vlmFiles(dir, stem string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), stem) {
			return err
		}
		if prev, dup := files[d.Name()]; dup {
			return fmt.Errorf("%s and %s: the folder holds more than one VLMEvalKit run", prev, path)
		}
		files[d.Name()] = path
		return nil
	})
	return files, err
}

// readVLMResults reads the per-item results: a sample per row, its hit
// the reward. An item the API model gave up on is an infrastructure
// failure, not a wrong answer.
func readVLMResults(path, dataset string) ([]Sample, error) {
	header, rows, err := readTable(path, '\t')
	if err != nil {
		return nil, err
	}
	for _, col := range []string{"index", "prediction", "hit"} {
		if !slices.Contains(header, col) {
			return nil, fmt.Errorf("%s: no %q column (columns: %s)", path, col, strings.Join(header, ", "))
		}
	}
	out := make([]Sample, 0, len(rows))
	for i, row := range rows {
		rec := map[string]string{}
		for j, col := range header {
			rec[col] = row[j]
		}
		hit, err := strconv.ParseFloat(rec["hit"], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: hit %q: %w", path, i+1, rec["hit"], err)
		}
		idx, err := strconv.ParseFloat(rec["index"], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: index %q: %w", path, i+1, rec["index"], err)
		}
		raw, _ := json.Marshal(rec)
		s := Sample{
			Task: rec["category"], ItemID: dataset + "/" + rec["index"], ItemIdx: int64(idx),
			Prompt: rec["question"], Response: rec["prediction"], Expected: rec["answer"],
			Reward: hit, Correct: binary(hit), Scores: map[string]float64{"hit": hit}, Record: string(raw),
		}
		if s.Task == "" {
			s.Task = dataset
		}
		if strings.HasPrefix(s.Response, vlmFailed) {
			s.Error = failure.APIError
		}
		out = append(out, s)
	}
	return out, nil
}

// readVLMScores reads a score table: a row per split (its first column,
// when that is text) or a single row, a column per metric. The aggregates
// are named "<metric file>/<split>/<column>", or "<metric file>/<column>".
func readVLMScores(path, metric string, o *Output) error {
	header, rows, err := readTable(path, ',')
	if err != nil {
		return err
	}
	for i, row := range rows {
		prefix := metric + "/"
		if _, err := strconv.ParseFloat(row[0], 64); err != nil && row[0] != "" {
			prefix += row[0] + "/"
		} else if len(rows) > 1 {
			prefix += strconv.Itoa(i) + "/"
		}
		for j, cell := range row {
			if x, err := strconv.ParseFloat(cell, 64); err == nil {
				o.Aggregate[prefix+header[j]] = x
			}
		}
	}
	return nil
}

// vlmPrimary is the headline of an aggregate-only result: the overall
// accuracy of the first split when there is one, else the first score.
func vlmPrimary(agg map[string]float64) string {
	keys := make([]string, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(k, "/Overall") {
			return k
		}
	}
	return keys[0]
}

// readTable reads a delimited file with a header row, every row as wide
// as the header.
func readTable(path string, comma rune) (header []string, rows [][]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = comma
	all, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("%s: empty", path)
	}
	return all[0], all[1:], nil
}

// rel is path relative to dir, with slashes: how Output.Files names files.
func rel(dir, path string) string {
	r, _ := filepath.Rel(dir, path)
	return filepath.ToSlash(r)
}
