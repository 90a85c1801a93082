package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/results"
)

// duckFile is the part of read.mjs's output per file this test uses.
type duckFile struct {
	File        string            `json:"file"`
	Rows        int64             `json:"rows"`
	Metadata    map[string]string `json:"metadata"`
	Aggregates  map[string]any    `json:"aggregates"`
	AvgReward   *float64          `json:"avg_reward"`
	TrueCorrect int64             `json:"true_correct"`
	Nulls       map[string]int64  `json:"nulls"`
}

func readWithDuckDB(t *testing.T, files []string) map[string]duckFile {
	t.Helper()
	out := testenv.DuckDBRead(t, files...)
	res := map[string]duckFile{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var d duckFile
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("decode read.mjs output: %v\n%s", err, out)
		}
		res[d.File] = d
	}
	if len(res) != len(files) {
		t.Fatalf("read.mjs printed %d results for %d files", len(res), len(files))
	}
	return res
}

// headlineRE matches the headline nel run prints per benchmark.
var headlineRE = regexp.MustCompile(`(?m)^(\S+)  pass@1 (\d+\.\d{4}) \((\d+)/(\d+) correct\), 95% CI \S+ · (\d+) items × (\d+) repeats · SIMULATED endpoint$`)

type headline struct {
	mean                             float64
	correct, samples, items, repeats int64
}

func parseHeadlines(t *testing.T, stdout string) map[string]headline {
	t.Helper()
	hs := map[string]headline{}
	for _, m := range headlineRE.FindAllStringSubmatch(stdout, -1) {
		mean, _ := strconv.ParseFloat(m[2], 64)
		n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
		hs[m[1]] = headline{mean, n(m[3]), n(m[4]), n(m[5]), n(m[6])}
	}
	return hs
}

// writeRunInputs writes a GSM8K-format JSONL, an MMLU CSV directory
// (<subject>_test.csv) and a recipe whose process service serves both from
// the simulated endpoint on port, wrong 40% of the time.
func writeRunInputs(t *testing.T, dir string, port int) string {
	t.Helper()
	var q strings.Builder
	for i := range 30 {
		a, b := 7+3*i, 11+5*i
		line, _ := json.Marshal(map[string]string{
			"question": fmt.Sprintf("Ann has %d apples and buys %d more. How many apples does Ann have?", a, b),
			"answer":   fmt.Sprintf("%d + %d = %d.\n#### %d", a, b, a+b, a+b),
		})
		q.Write(append(line, '\n'))
	}
	mmlu := filepath.Join(dir, "mmlu")
	if err := os.MkdirAll(mmlu, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"q.jsonl": q.String(),
		"mmlu/astronomy_test.csv": "question,choice0,choice1,choice2,choice3,answer\n" +
			"What is closest to the Sun?,Mercury,Venus,Earth,Mars,0\n" +
			"\"Which, of these, is a star?\",The Moon,The Sun,Io,Europa,1\n" +
			"\"A \"\"red giant\"\" is\",a planet,a comet,a star,a moon,2\n" +
			"How many planets?,6,7,9,8,3\n" +
			"Largest planet?,Jupiter,Saturn,Neptune,Uranus,0\n",
		"mmlu/anatomy_test.csv": "question,choice0,choice1,choice2,choice3,answer\n" +
			"How many chambers has the heart?,2,3,4,5,2\n" +
			"Largest organ?,Liver,Skin,Brain,Lung,1\n" +
			"\"Bones in the adult body,\nroughly?\",106,206,306,406,1\n" +
			"Where is the femur?,Arm,Skull,Chest,Leg,3\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	recipe := fmt.Sprintf(`services: sim: {
	type:    "process"
	command: ["nel-run", "sim-server", "--addr", %q, "--accuracy", "0.6",
		"--benchmark", %q, "--benchmark", %q]
	port:  %d
	model: "nel-sim"
}
benchmarks: [{
	name:    "gsm8k"
	repeats: 3
	params: data_path: "q.jsonl"
	solver: {type: "simple", service: "sim"}
}, {
	name:    "mmlu"
	repeats: 2
	params: data_path: "mmlu"
	solver: {type: "simple", service: "sim"}
}]
cluster: {type: "local", shards: 3}
output: dir: "out"
`, addr, "gsm8k="+filepath.Join(dir, "q.jsonl"), "mmlu="+mmlu, port)
	path := filepath.Join(dir, "recipe.cue")
	if err := os.WriteFile(path, []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunDuckDB does a real nel run of two benchmarks in three shards and
// reads every Parquet file it wrote with DuckDB: row counts, rewards,
// correct counts and metadata agree with nel's own reader and with the
// headlines nel printed.
func TestRunDuckDB(t *testing.T) {
	testenv.DuckDBReader(t) // before the work, not after it
	bin := realNelRun(t)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	recipe := writeRunInputs(t, dir, port)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "-o", out, recipe}, &stdout, &stderr); code != 0 {
		t.Fatalf("nel run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	heads := parseHeadlines(t, stdout.String())
	t.Logf("nel run:\n%s", stdout.String())
	want := map[string]struct{ items, repeats int64 }{"gsm8k": {30, 3}, "mmlu": {9, 2}}
	if len(heads) != len(want) {
		t.Fatalf("headlines %v, want one per benchmark of %v; stdout:\n%s", heads, want, stdout.String())
	}

	// Every Parquet file under out: per benchmark the merged results and
	// trajectories, and each of the 3 shards' results and trajectories.
	var files []string
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*(2+2*3) {
		t.Fatalf("nel run wrote %d Parquet files, want %d: %v", len(files), 2*(2+2*3), files)
	}
	duck := readWithDuckDB(t, files)

	for b, w := range want {
		t.Run(b, func(t *testing.T) {
			h := heads[b]
			if h.items != w.items || h.repeats != w.repeats || h.samples != w.items*w.repeats {
				t.Errorf("headline: %d items × %d repeats, %d samples; want %d × %d", h.items, h.repeats, h.samples, w.items, w.repeats)
			}
			if h.correct == 0 || h.correct == h.samples {
				t.Errorf("headline: %d/%d correct: the sim at accuracy 0.6 should get some wrong and some right", h.correct, h.samples)
			}
			bdir := filepath.Join(out, b)
			merged := checkResults(t, duck, filepath.Join(bdir, "results.parquet"), filepath.Join(bdir, "trajectories.parquet"))
			if merged.rows != h.samples {
				t.Errorf("merged results: DuckDB sees %d rows, the headline %d samples", merged.rows, h.samples)
			}
			// gsm8k's items have no category, mmlu's have their subject.
			if wantNull := map[string]int64{"gsm8k": merged.rows, "mmlu": 0}[b]; merged.nullCategory != wantNull {
				t.Errorf("merged results: %d rows with a NULL category, want %d", merged.nullCategory, wantNull)
			}
			if merged.correct != h.correct {
				t.Errorf("merged results: DuckDB counts %d correct, the headline %d", merged.correct, h.correct)
			}
			if math.Abs(merged.avg-h.mean) > 0.5e-4 {
				t.Errorf("merged results: DuckDB avg(reward) %.6f, the headline %.4f", merged.avg, h.mean)
			}
			var rows, correct int64
			var rewardSum float64
			for i := range 3 {
				s := checkResults(t, duck,
					filepath.Join(bdir, "shards", fmt.Sprintf("shard-%05d-of-00003.parquet", i)),
					filepath.Join(bdir, "shards", fmt.Sprintf("shard-%05d-of-00003.trajectories.parquet", i)))
				rows += s.rows
				correct += s.correct
				rewardSum += s.avg * float64(s.rows)
			}
			if rows != merged.rows || correct != merged.correct || math.Abs(rewardSum-merged.avg*float64(merged.rows)) > 1e-9 {
				t.Errorf("shards add up to %d rows, %d correct, reward %v; merged %d, %d, %v",
					rows, correct, rewardSum, merged.rows, merged.correct, merged.avg*float64(merged.rows))
			}
			checkProvenanceJSON(t, bdir)
		})
	}
}

// checkProvenanceJSON: nel.provenance is plain JSON text that DuckDB reads
// as the README says: a shard's record an object, the merged file's an
// array of the shards' distinct records, each with its build, host and
// serving.
func checkProvenanceJSON(t *testing.T, bdir string) {
	t.Helper()
	for file, typ := range map[string]string{"results.parquet": "ARRAY", "shards/shard-00000-of-00003.parquet": "OBJECT"} {
		got := testenv.DuckDBQuery(t, bdir, "SELECT json_type(p) AS t, json_keys(CASE WHEN json_type(p) = 'ARRAY' THEN p->0 ELSE p END) AS k "+
			"FROM (SELECT decode(value)::JSON AS p FROM parquet_kv_metadata('"+file+"') WHERE decode(key) = 'nel.provenance')")
		if len(got) != 1 || got[0]["t"] != typ || fmt.Sprint(got[0]["k"]) != "[provenance_version build host serving]" {
			t.Errorf("%s: nel.provenance read by DuckDB as %v, want a JSON %s of records with provenance_version, build, host, serving", file, got, typ)
		}
	}
}

type fileSummary struct {
	rows, correct int64
	avg           float64
	nullCategory  int64 // rows whose category DuckDB sees as NULL
}

// checkResults compares DuckDB's view of one results file and its
// trajectories with nel's reader and returns DuckDB's numbers.
func checkResults(t *testing.T, duck map[string]duckFile, resPath, trajPath string) fileSummary {
	t.Helper()
	name := filepath.Base(resPath)
	rows, meta, err := results.ReadRows(resPath)
	if err != nil {
		t.Fatalf("nel reads %s: %v", name, err)
	}
	d, ok := duck[resPath]
	if !ok {
		t.Fatalf("DuckDB did not read %s", resPath)
	}
	var sum float64
	var correct int64
	for _, r := range rows {
		sum += r.Reward
		if r.Correct != nil && *r.Correct {
			correct++
		}
	}
	if d.Rows != int64(len(rows)) {
		t.Errorf("%s: DuckDB sees %d rows, nel %d", name, d.Rows, len(rows))
	}
	var avg float64
	switch {
	case len(rows) == 0: // a shard may get no items: avg over no rows is NULL
		if d.AvgReward != nil {
			t.Errorf("%s: DuckDB avg(reward) over no rows = %v, want NULL", name, *d.AvgReward)
		}
	case d.AvgReward == nil:
		t.Fatalf("%s: DuckDB gives no avg(reward) over %d rows", name, d.Rows)
	default:
		avg = *d.AvgReward
		if mean := sum / float64(len(rows)); math.Abs(avg-mean) > 1e-12 {
			t.Errorf("%s: DuckDB avg(reward) = %.17g, nel %.17g", name, avg, mean)
		}
	}
	if d.TrueCorrect != correct {
		t.Errorf("%s: DuckDB counts %d correct, nel %d", name, d.TrueCorrect, correct)
	}
	// The served model on every row; category NULL (not '') where the
	// item has none, which nel reads back as "".
	var noCategory int64
	for _, r := range rows {
		if r.Model != "nel-sim" {
			t.Errorf("%s: item %s repeat %d has model %q, want nel-sim", name, r.ItemID, r.Repeat, r.Model)
			break
		}
		if r.Category == "" {
			noCategory++
		}
	}
	if want := strconv.Itoa(len("nel-sim") * len(rows)); len(rows) > 0 && d.Aggregates["len:model"] != want {
		t.Errorf("%s: DuckDB sum(strlen(model)) = %v, want %s (nel-sim on every row)", name, d.Aggregates["len:model"], want)
	}
	if d.Nulls["category"] != noCategory {
		t.Errorf("%s: DuckDB sees %d NULL categories, nel %d rows without one", name, d.Nulls["category"], noCategory)
	}
	if !maps.Equal(d.Metadata, meta) {
		t.Errorf("%s: DuckDB metadata %v, nel %v", name, d.Metadata, meta)
	}
	if meta[results.MetaSimulated] != "true" || meta[results.MetaRows] != strconv.Itoa(len(rows)) {
		t.Errorf("%s: metadata %s=%q, %s=%q", name, results.MetaSimulated, meta[results.MetaSimulated], results.MetaRows, meta[results.MetaRows])
	}

	trajs, tmeta, err := results.ReadTrajectories(trajPath)
	if err != nil {
		t.Fatalf("nel reads %s: %v", filepath.Base(trajPath), err)
	}
	td, ok := duck[trajPath]
	if !ok {
		t.Fatalf("DuckDB did not read %s", trajPath)
	}
	if td.Rows != int64(len(trajs)) || td.Rows != d.Rows {
		t.Errorf("%s: DuckDB sees %d trajectories, nel %d, results %d", filepath.Base(trajPath), td.Rows, len(trajs), d.Rows)
	}
	if !maps.Equal(td.Metadata, tmeta) {
		t.Errorf("%s: DuckDB metadata %v, nel %v", filepath.Base(trajPath), td.Metadata, tmeta)
	}
	// Every (item, repeat) once, in both files.
	keys := func(n int, key func(int) string) []string {
		var ks []string
		for i := range n {
			ks = append(ks, key(i))
		}
		slices.Sort(ks)
		return slices.Compact(ks)
	}
	rk := keys(len(rows), func(i int) string { return fmt.Sprintf("%s/%d", rows[i].ItemID, rows[i].Repeat) })
	tk := keys(len(trajs), func(i int) string { return fmt.Sprintf("%s/%d", trajs[i].ItemID, trajs[i].Repeat) })
	if len(rk) != len(rows) || !slices.Equal(rk, tk) {
		t.Errorf("%s: %d distinct (item, repeat) of %d rows; trajectories differ: %v", name, len(rk), len(rows), !slices.Equal(rk, tk))
	}
	return fileSummary{rows: d.Rows, correct: d.TrueCorrect, avg: avg, nullCategory: d.Nulls["category"]}
}
