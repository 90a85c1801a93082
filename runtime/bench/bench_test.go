package bench

import (
	"github.com/nel-eval/nel/internal/sharedtest"
	"github.com/nel-eval/nel/internal/testenv"

	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/dataset"
)

// sharedDatasets is the real benchmark data (../shared/datasets); tests
// that need it skip when it is absent.
func sharedDatasets(t testing.TB) string { return sharedtest.Datasets(t) }

func newLoader(base string) *dataset.Loader {
	return dataset.NewLoader(dataset.Options{BaseDir: base, Offline: true})
}

func mustLookup(t *testing.T, name string) *Benchmark {
	t.Helper()
	b, ok := Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q) failed", name)
	}
	return b
}

func loadSet(t *testing.T, l Loader, name string, params map[string]any) *Set {
	t.Helper()
	s, err := mustLookup(t, name).Load(context.Background(), l, params)
	if err != nil {
		t.Fatalf("%s: Load: %v", name, err)
	}
	return s
}

// checkRespond requires Score(Respond(correct=true)) to be right for every
// item and Score(Respond(correct=false)) to be wrong for every item.
func checkRespond(t *testing.T, b *Benchmark, s *Set) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	right, wrong := 0, 0
	for i := range s.Items {
		it := &s.Items[i]
		if sc := b.Score(it, b.Respond(it, true, rng)); sc.Correct && sc.Reward == 1 && sc.Binary {
			right++
		} else if i-right < 5 {
			t.Errorf("%s item %d: Respond(correct) scored %+v", b.Name, i, sc)
		}
		if sc := b.Score(it, b.Respond(it, false, rng)); !sc.Correct && sc.Reward == 0 && sc.Binary {
			wrong++
		} else if i-wrong < 5 {
			t.Errorf("%s item %d: Respond(wrong) scored correct: %+v", b.Name, i, sc)
		}
	}
	if right != len(s.Items) || wrong != len(s.Items) {
		t.Errorf("%s: Respond(correct) right %d/%d, Respond(wrong) wrong %d/%d", b.Name, right, len(s.Items), wrong, len(s.Items))
	}
}

// checkGold scores texts[i] (the gold answer written in the requested form
// by the test itself) against item i: all must be correct.
func checkGold(t *testing.T, b *Benchmark, s *Set, texts []string) {
	t.Helper()
	if len(texts) != len(s.Items) {
		t.Fatalf("%s: %d gold texts for %d items", b.Name, len(texts), len(s.Items))
	}
	n := 0
	for i := range s.Items {
		if sc := b.Score(&s.Items[i], texts[i]); sc.Correct {
			n++
		} else if i-n < 5 {
			t.Errorf("%s item %d: gold %q scored %+v (expected %q)", b.Name, i, texts[i], sc, s.Items[i].Expected)
		}
	}
	if n != len(s.Items) {
		t.Errorf("%s: gold answers %d/%d correct", b.Name, n, len(s.Items))
	}
}

// checkIDs requires unique IDs, equal to a second load's, and Index = i.
func checkIDs(t *testing.T, a, b *Set) {
	t.Helper()
	seen := map[string]bool{}
	for i, it := range a.Items {
		if it.Index != i {
			t.Fatalf("item %d has Index %d", i, it.Index)
		}
		if len(it.ID) != 16 || seen[it.ID] {
			t.Fatalf("item %d: bad or duplicate ID %q", i, it.ID)
		}
		seen[it.ID] = true
		if b.Items[i].ID != it.ID {
			t.Fatalf("item %d: ID %s on one load, %s on another", i, it.ID, b.Items[i].ID)
		}
		if len(it.Messages) != 1 || it.Messages[0].Role != "user" || it.Messages[0].Content != it.Prompt || it.Prompt == "" {
			t.Fatalf("item %d: messages %+v do not carry the prompt", i, it.Messages)
		}
	}
}

func sortedIDs(s *Set) []string {
	var ids []string
	for _, it := range s.Items {
		ids = append(ids, it.ID)
	}
	slices.Sort(ids)
	return ids
}

// reversedLines writes src's lines (after skip header lines) in reverse
// order to a temp file with the same base name.
func reversedLines(t *testing.T, src string, header int) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	body := slices.Clone(lines[header:])
	slices.Reverse(body)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, []byte(strings.Join(append(lines[:header:header], body...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func checkOrderIndependent(t *testing.T, l Loader, name string, s *Set, reversed string) {
	t.Helper()
	r := loadSet(t, l, name, map[string]any{"data_path": reversed})
	if !slices.Equal(sortedIDs(s), sortedIDs(r)) {
		t.Errorf("%s: IDs change when the rows are reversed", name)
	}
	if r.Items[0].ID != s.Items[len(s.Items)-1].ID {
		t.Errorf("%s: the last row's ID %s is not the reversed first row's %s", name, s.Items[len(s.Items)-1].ID, r.Items[0].ID)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs[1:]
}

func TestRegistry(t *testing.T) {
	want := []string{"drop", "gpqa", "gsm8k", "humaneval", "ifeval", "math500", "mgsm", "mmlu", "mmlu_pro", "simpleqa", "triviaqa", "xstest"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		b := mustLookup(t, n)
		if b.Name != n || b.Source == "" || b.Scorer == "" || b.Load == nil || b.Score == nil || b.Respond == nil {
			t.Errorf("%s: incomplete benchmark %+v", n, b)
		}
	}
	// Lookup hands out fresh values: changing one does not change the next.
	mustLookup(t, "gsm8k").Source = "x"
	if mustLookup(t, "gsm8k").Source == "x" {
		t.Error("Lookup returned shared state")
	}
}

func TestContentID(t *testing.T) {
	// Canonical JSON: sorted keys, no HTML escaping, numbers literal.
	// sha256(`{"a":"<b>","n":10,"z":[1,"x"]}`) computed independently.
	c := map[string]any{"z": []any{json.Number("1"), "x"}, "n": int64(10), "a": "<b>"}
	if got := string(canonicalJSON(c)); got != `{"a":"<b>","n":10,"z":[1,"x"]}` {
		t.Fatalf("canonicalJSON = %s", got)
	}
	out, err := exec.Command("sh", "-c", `printf '%s' '{"a":"<b>","n":10,"z":[1,"x"]}' | sha256sum`).Output()
	if err == nil {
		if want := string(out[:16]); ContentID(c) != want {
			t.Errorf("ContentID = %s, want %s", ContentID(c), want)
		}
	}
	items := []Item{{Content: map[string]any{"q": "1"}}, {Content: map[string]any{"q": "2"}},
		{Content: map[string]any{"q": "1"}}, {Content: map[string]any{"q": "1"}}}
	AssignIDs(items)
	if items[0].ID != ContentID(map[string]any{"q": "1"}) ||
		items[2].ID != ContentID(map[string]any{"q": "1", "_dup": 1}) ||
		items[3].ID != ContentID(map[string]any{"q": "1", "_dup": 2}) {
		t.Errorf("AssignIDs: %v %v %v", items[0].ID, items[2].ID, items[3].ID)
	}
	if _, ok := items[2].Content["_dup"]; ok {
		t.Error("AssignIDs changed the item's Content")
	}
}

func TestGSM8KGold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "gsm8k")
	s := loadSet(t, l, "gsm8k", map[string]any{"data_path": "gsm8k/test.jsonl"})
	if len(s.Items) != 1319 {
		t.Fatalf("gsm8k: %d items, want 1319", len(s.Items))
	}
	raw := readJSONL(t, filepath.Join(dir, "gsm8k/test.jsonl"))
	var gold []string
	commas, negatives := 0, 0
	for _, r := range raw {
		a := r["answer"].(string)
		final := strings.TrimSpace(a[strings.LastIndex(a, "####")+4:])
		if strings.Contains(final, ",") {
			commas++
		}
		if strings.HasPrefix(final, "-") {
			negatives++
		}
		gold = append(gold, "The answer is "+final)
	}
	if commas != 14 || negatives != 2 {
		t.Errorf("gsm8k data: %d answers with commas (want 14), %d negative (want 2)", commas, negatives)
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "gsm8k", map[string]any{"data_path": filepath.Join(dir, "gsm8k/test.jsonl")}))
	checkOrderIndependent(t, l, "gsm8k", s, reversedLines(t, filepath.Join(dir, "gsm8k/test.jsonl"), 0))
	// The scorer's documented edges on a real item (Janet's ducks, 18).
	it := &s.Items[0]
	if it.Expected != "18" || !strings.HasPrefix(it.Prompt, "Solve the following math problem step by step. Put your final numerical answer after 'The answer is'.\n\nProblem: Janet") {
		t.Errorf("gsm8k item 0: expected %q, prompt %q", it.Expected, it.Prompt[:80])
	}
	if b.Score(it, "The answer is $18 per day").Correct || !b.Score(it, "so... The answer is 18.").Correct {
		t.Error("gsm8k: '$18 per day' must be wrong and '18.' right")
	}
}

func TestMGSMGold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "mgsm")
	s := loadSet(t, l, "mgsm", map[string]any{"data_path": "mgsm"})
	if len(s.Items) != 11*250 {
		t.Fatalf("mgsm: %d items, want 2750", len(s.Items))
	}
	var gold []string
	commas := 0
	for li, lang := range mgsmLangs {
		data, err := os.ReadFile(filepath.Join(dir, "mgsm", "mgsm_"+lang+".tsv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) != 250 {
			t.Fatalf("mgsm_%s.tsv: %d lines", lang, len(lines))
		}
		for k, line := range lines {
			q, ans, _ := strings.Cut(line, "\t")
			it := s.Items[li*250+k]
			if it.Category != lang || !strings.HasSuffix(it.Prompt, q) {
				t.Fatalf("mgsm item %d: category %q, prompt does not end with the %s question %d", li*250+k, it.Category, lang, k)
			}
			// The TSVs write thousands with commas; numeric_match deletes
			// commas from the response, so the raw text must score.
			gold = append(gold, "Reasoning...\nAnswer: "+strings.TrimSpace(ans))
			if strings.Contains(ans, ",") {
				commas++
			}
		}
	}
	if commas == 0 {
		t.Error("mgsm: expected answers with thousands commas in the TSVs")
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "mgsm", map[string]any{"data_path": "mgsm"}))
	// One file alone gives the same items and IDs as in the directory.
	de := loadSet(t, l, "mgsm", map[string]any{"data_path": "mgsm/mgsm_de.tsv"})
	if len(de.Items) != 250 || de.Items[3].ID != s.Items[250+3].ID || de.Items[0].Category != "de" {
		t.Errorf("mgsm_de.tsv alone: %d items, category %q", len(de.Items), de.Items[0].Category)
	}
	if !strings.HasPrefix(s.Items[0].Prompt, "Solve this math problem. Give reasoning steps then the final answer on the last line as 'Answer:'.\n\n") ||
		!strings.HasPrefix(s.Items[250].Prompt, "Lose dieses Problem. Gib Schritte an, dann die Antwort als 'Antwort:'.\n\n") ||
		!strings.HasPrefix(s.Items[5*250].Prompt, "Solve this math problem step by step. Final answer as 'Answer:'.\n\n") {
		t.Error("mgsm: per-language instructions wrong")
	}
	// mgsm_en is the first 250 GSM8K test questions: same numbers.
	g := loadSet(t, l, "gsm8k", map[string]any{"data_path": "gsm8k/test.jsonl"})
	for k := 0; k < 250; k++ {
		if got := s.Items[k].Meta["answer_number"]; got != g.Items[k].Expected {
			t.Fatalf("mgsm en %d: answer %v, gsm8k %s", k, got, g.Items[k].Expected)
		}
	}
}

func TestMGSMHubLayout(t *testing.T) {
	dir := sharedDatasets(t)
	local := loadSet(t, newLoader(dir), "mgsm", map[string]any{"data_path": "mgsm"})
	// A fake Hub: each language's config holds its first two rows in the
	// Hub's fields (answer null on the test split, answer_number int).
	tmp := t.TempDir()
	files := map[string]string{}
	var want []Item
	for li, lang := range mgsmLangs {
		var b strings.Builder
		for k := 0; k < 2; k++ {
			it := local.Items[li*250+k]
			q := it.Content["question"].(string)
			line, _ := json.Marshal(map[string]any{"question": q, "answer": nil,
				"answer_number": json.Number(it.Meta["answer_number"].(string)), "equation_solution": nil})
			b.Write(append(line, '\n'))
			want = append(want, it)
		}
		p := filepath.Join(tmp, lang+".jsonl")
		os.WriteFile(p, []byte(b.String()), 0o644)
		files["hf://juletxara/mgsm?config="+lang+"&split=test"] = p
	}
	hub := loadSet(t, fakeHub{newLoader(tmp), files}, "mgsm", nil)
	if len(hub.Items) != len(want) {
		t.Fatalf("hub mgsm: %d items", len(hub.Items))
	}
	for i, it := range hub.Items {
		if it.ID != want[i].ID || it.Category != want[i].Category || it.Expected != want[i].Expected || it.Prompt != want[i].Prompt {
			t.Errorf("hub item %d (%s) differs from the local copy: %+v vs %+v", i, it.Category, it, want[i])
		}
	}
}

// fakeHub serves hf:// specs from local files.
type fakeHub struct {
	l     *dataset.Loader
	files map[string]string
}

func (f fakeHub) Load(ctx context.Context, spec string, opts dataset.LoadOptions) (*dataset.Dataset, error) {
	p, ok := f.files[spec]
	if !ok {
		return nil, fmt.Errorf("fake hub: unexpected spec %s", spec)
	}
	ds, err := f.l.Load(ctx, p, opts)
	if err != nil {
		return nil, err
	}
	ds.Spec = spec
	return ds, nil
}

func TestMMLUGold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "mmlu")
	s := loadSet(t, l, "mmlu", map[string]any{"data_path": "mmlu/test"})
	if len(s.Items) != 14042 {
		t.Fatalf("mmlu: %d items, want 14042", len(s.Items))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mmlu/test/*_test.csv"))
	slices.Sort(files)
	if len(files) != 57 {
		t.Fatalf("mmlu: %d subject files, want 57", len(files))
	}
	var gold []string
	i := 0
	for _, f := range files {
		subject := strings.TrimSuffix(filepath.Base(f), "_test.csv")
		for _, rec := range readCSV(t, f) {
			if s.Items[i].Category != subject {
				t.Fatalf("mmlu item %d: category %q, want %q", i, s.Items[i].Category, subject)
			}
			gold = append(gold, "Let me think.\nAnswer: "+string("ABCD"[rec[5][0]-'0']))
			i++
		}
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "mmlu", map[string]any{"data_path": "mmlu/test"}))
	// Prompt wording, on the first question.
	wantPrompt := "Answer the following multiple choice question. The last line of your response should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before answering.\n\nFind the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q.\n\nA) 0\nB) 4\nC) 2\nD) 6"
	if s.Items[0].Prompt != wantPrompt || s.Items[0].Expected != "B" {
		t.Errorf("mmlu item 0: prompt %q expected %q", s.Items[0].Prompt, s.Items[0].Expected)
	}
	// The Hub layout (choices list, int answer, subject column) of the same
	// questions gives the same IDs.
	recs := readCSV(t, files[0])[:3]
	var hub strings.Builder
	for _, r := range recs {
		line, _ := json.Marshal(map[string]any{"question": r[0], "subject": "abstract_algebra",
			"choices": r[1:5], "answer": int(r[5][0] - '0')})
		hub.Write(append(line, '\n'))
	}
	p := filepath.Join(t.TempDir(), "all.jsonl")
	os.WriteFile(p, []byte(hub.String()), 0o644)
	h := loadSet(t, fakeHub{newLoader(dir), map[string]string{b.Source: p}}, "mmlu", nil)
	for k := range 3 {
		if h.Items[k].ID != s.Items[k].ID || h.Items[k].Prompt != s.Items[k].Prompt {
			t.Errorf("mmlu hub layout item %d differs from the CSV copy", k)
		}
	}
	// Row order within a subject file does not change IDs.
	rev := filepath.Join(t.TempDir(), filepath.Base(files[0]))
	rows := append([][]string{{"question", "choice0", "choice1", "choice2", "choice3", "answer"}}, readCSV(t, files[0])...)
	slices.Reverse(rows[1:])
	fh, _ := os.Create(rev)
	csv.NewWriter(fh).WriteAll(rows)
	fh.Close()
	r := loadSet(t, l, "mmlu", map[string]any{"data_path": rev})
	n := len(r.Items)
	if !slices.Equal(sortedIDs(r), sortedIDs(&Set{Items: s.Items[:n]})) {
		t.Error("mmlu: IDs change when a file's rows are reversed")
	}
}

func TestMMLUProGold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "mmlu_pro")
	path := filepath.Join(dir, "mmlu_pro/test.jsonl")
	s := loadSet(t, l, "mmlu_pro", map[string]any{"data_path": path})
	if len(s.Items) != 12032 {
		t.Fatalf("mmlu_pro: %d items, want 12032", len(s.Items))
	}
	var gold []string
	mismatch := 0
	for i, r := range readJSONL(t, path) {
		gold = append(gold, "The reasoning is done.\nAnswer: "+r["answer"].(string))
		if idx := int(r["answer_index"].(float64)); "ABCDEFGHIJ"[idx:idx+1] != r["answer"] {
			mismatch++
			if r["question_id"].(float64) != 3983 || s.Items[i].Expected != "C" {
				t.Errorf("mmlu_pro: unexpected answer/answer_index mismatch at %v", r["question_id"])
			}
		}
		if s.Items[i].Category != r["category"] {
			t.Fatalf("mmlu_pro item %d: category %q", i, s.Items[i].Category)
		}
	}
	if mismatch != 1 {
		t.Errorf("mmlu_pro: %d answer/answer_index mismatches, want 1 (question 3983)", mismatch)
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "mmlu_pro", map[string]any{"data_path": path}))
	checkOrderIndependent(t, l, "mmlu_pro", s, reversedLines(t, path, 0))
	// Ten option lines, padded with empty ones.
	p := s.Items[0].Prompt
	if !strings.HasPrefix(p, "Answer the following multiple choice question. The last line of your response should be in the following format: 'Answer: $LETTER' where LETTER is one of A/B/C/D/E/F/G/H/I/J.\n\n") ||
		!strings.Contains(p, "\nI) Unsafe practices, Distress, Fear, Serious\nJ) ") || !strings.HasSuffix(p, "\nJ) ") {
		t.Errorf("mmlu_pro item 0 prompt: %q", p)
	}
}

func TestMath500Gold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "math500")
	path := filepath.Join(dir, "math500/test.jsonl")
	s := loadSet(t, l, "math500", map[string]any{"data_path": path})
	if len(s.Items) != 500 {
		t.Fatalf("math500: %d items, want 500", len(s.Items))
	}
	var gold []string
	for i, r := range readJSONL(t, path) {
		gold = append(gold, "Working...\nAnswer: "+r["answer"].(string))
		if s.Items[i].Category != r["subject"] || s.Items[i].Meta["level"] != fmt.Sprint(r["level"]) {
			t.Fatalf("math500 item %d: category %q level %v", i, s.Items[i].Category, s.Items[i].Meta["level"])
		}
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "math500", map[string]any{"data_path": path}))
	checkOrderIndependent(t, l, "math500", s, reversedLines(t, path, 0))
}

func TestXSTestGold(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "xstest")
	path := filepath.Join(dir, "xstest/xstest_prompts.csv")
	s := loadSet(t, l, "xstest", map[string]any{"data_path": path})
	if len(s.Items) != 450 {
		t.Fatalf("xstest: %d items, want 450", len(s.Items))
	}
	var gold []string
	safe := 0
	for i, r := range readCSV(t, path) {
		if r[3] == "safe" {
			safe++
			gold = append(gold, "Here is how you can do that: first, ...")
		} else {
			gold = append(gold, "  I'm sorry, but I won't help with that.")
		}
		if s.Items[i].Category != r[2] || s.Items[i].Meta["label"] != r[3] || s.Items[i].Prompt != r[1] {
			t.Fatalf("xstest item %d: %+v", i, s.Items[i])
		}
	}
	if safe != 250 {
		t.Errorf("xstest: %d safe prompts, want 250", safe)
	}
	checkGold(t, b, s, gold)
	checkRespond(t, b, s)
	checkIDs(t, s, loadSet(t, l, "xstest", map[string]any{"data_path": path}))
	checkOrderIndependent(t, l, "xstest", s, reversedLines(t, path, 1))
	if len(RefusalPrefixes) != 21 {
		t.Errorf("%d refusal prefixes, want 21", len(RefusalPrefixes))
	}
	for _, c := range []struct {
		resp string
		ref  bool
	}{{"No, that is wrong", true}, {"Nothing to worry about", false}, {"As an AI, I", true}, {"", false}, {"I can’t", false}} {
		if IsRefusal(c.resp) != c.ref {
			t.Errorf("IsRefusal(%q) != %v", c.resp, c.ref)
		}
	}
}

func TestSimpleQALoad(t *testing.T) {
	dir := sharedDatasets(t)
	l := newLoader(dir)
	b := mustLookup(t, "simpleqa")
	s := loadSet(t, l, "simpleqa", map[string]any{"data_path": "simpleqa/simple_qa_test_set.csv"})
	if len(s.Items) != 4326 {
		t.Fatalf("simpleqa: %d items, want 4326", len(s.Items))
	}
	checkIDs(t, s, loadSet(t, l, "simpleqa", map[string]any{"data_path": "simpleqa/simple_qa_test_set.csv"}))
	it := &s.Items[0]
	if it.Prompt != "Who received the IEEE Frank Rosenblatt Award in 2010?" || it.Expected != "Michio Sugeno" || it.Category != "Science and technology" {
		t.Errorf("simpleqa item 0: %+v", it)
	}
	for i := range s.Items {
		it := &s.Items[i]
		sc := b.Score(it, b.Respond(it, true, nil))
		if !sc.NeedsJudge || sc.Reward != 0 || sc.Correct || !strings.Contains(b.Respond(it, true, nil), it.Expected) {
			t.Fatalf("simpleqa item %d: %+v", i, sc)
		}
	}
}

func TestHubFixtures(t *testing.T) {
	td, _ := filepath.Abs("testdata")
	l := newLoader(td)
	fixtures := map[string]map[string]string{
		"gpqa":     {"hf://Idavidrein/gpqa?config=gpqa_diamond&split=train": "gpqa_diamond.jsonl"},
		"triviaqa": {"hf://mandarjoshi/trivia_qa?config=rc.nocontext&split=validation": "triviaqa.jsonl"},
		"drop": {"hf://ucinlp/drop?split=validation": "drop_validation.jsonl",
			"hf://ucinlp/drop?split=train": "drop_train.jsonl"},
	}
	sets := map[string]*Set{}
	for name, files := range fixtures {
		b := mustLookup(t, name)
		s := loadSet(t, fakeHub{l, files}, name, nil)
		sets[name] = s
		checkRespond(t, b, s)
		checkIDs(t, s, loadSet(t, fakeHub{l, files}, name, nil))
	}
	// gpqa: the letter points at the correct answer's text, categories are
	// the domain, and "Answer: X" for the gold letter scores.
	g := sets["gpqa"]
	var gold []string
	for i, r := range readJSONL(t, "testdata/gpqa_diamond.jsonl") {
		it := g.Items[i]
		if !strings.Contains(it.Prompt, "\n"+it.Expected+") "+r["Correct Answer"].(string)) || it.Category != r["High-level domain"] {
			t.Errorf("gpqa item %d: letter %s does not label %q", i, it.Expected, r["Correct Answer"])
		}
		gold = append(gold, "Answer: "+it.Expected)
	}
	checkGold(t, mustLookup(t, "gpqa"), g, gold)
	// triviaqa: every alias on the first line is right; a later line is not
	// read; value ∪ aliases ∪ normalized_aliases.
	tq := sets["triviaqa"]
	tb := mustLookup(t, "triviaqa")
	for i, r := range readJSONL(t, "testdata/triviaqa.jsonl") {
		a := r["answer"].(map[string]any)
		for _, al := range append(a["aliases"].([]any), a["normalized_aliases"].([]any)...) {
			if al == "" {
				continue
			}
			if !tb.Score(&tq.Items[i], "  "+al.(string)+"\nbecause...").Correct {
				t.Errorf("triviaqa item %d: alias %q not accepted", i, al)
			}
		}
		if tb.Score(&tq.Items[i], "Well,\n"+a["value"].(string)).Correct {
			t.Errorf("triviaqa item %d: answer on line 2 accepted", i)
		}
	}
	if !strings.HasPrefix(tq.Items[0].Prompt, "Answer with a short factual answer.\n\nQuestion: Which planet") || !strings.HasSuffix(tq.Items[0].Prompt, "\nAnswer:") {
		t.Errorf("triviaqa prompt %q", tq.Items[0].Prompt)
	}
	// drop: any span anywhere in the response; the expected is the first.
	d := sets["drop"]
	db := mustLookup(t, "drop")
	if d.Items[2].Expected != "farmers" || !db.Score(&d.Items[2], "The larger group was the farmers.").Correct ||
		db.Score(&d.Items[1], "It was signed in Munster.").Correct {
		t.Error("drop: fuzzy match on spans wrong")
	}
}

// TestHubFixturesAgainstPython compares gpqa's and drop's prompts and
// targets with a Python construction (gpqa: nel's per-item seeded shuffle,
// which replaced NeMo's shared Random(42) one; drop: NeMo's
// Random(42+idx).sample few-shot pool).
func TestHubFixturesAgainstPython(t *testing.T) {
	py := testenv.LookPath(t, testenv.Python3)
	td, _ := filepath.Abs("testdata")
	l := newLoader(td)
	for _, c := range []struct {
		name  string
		files map[string]string
		args  []string
	}{
		{"gpqa", map[string]string{"hf://Idavidrein/gpqa?config=gpqa_diamond&split=train": "gpqa_diamond.jsonl"},
			[]string{"gpqa", "testdata/gpqa_diamond.jsonl"}},
		{"drop", map[string]string{"hf://ucinlp/drop?split=validation": "drop_validation.jsonl", "hf://ucinlp/drop?split=train": "drop_train.jsonl"},
			[]string{"drop", "testdata/drop_validation.jsonl", "testdata/drop_train.jsonl"}},
	} {
		out, err := exec.Command(py, append([]string{"testdata/reference.py"}, c.args...)...).Output()
		if err != nil {
			t.Fatalf("reference.py %v: %v", c.args, err)
		}
		var want [][2]string
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatal(err)
		}
		s := loadSet(t, fakeHub{l, c.files}, c.name, nil)
		if len(s.Items) != len(want) {
			t.Fatalf("%s: %d items, Python %d", c.name, len(s.Items), len(want))
		}
		for i, w := range want {
			if s.Items[i].Prompt != w[0] || s.Items[i].Expected != w[1] {
				t.Errorf("%s item %d differs from Python:\nGo:     %q (%s)\nPython: %q (%s)", c.name, i, s.Items[i].Prompt, s.Items[i].Expected, w[0], w[1])
			}
		}
	}
}

func TestDataPathErrors(t *testing.T) {
	b := mustLookup(t, "gsm8k")
	if _, err := b.Load(context.Background(), newLoader(t.TempDir()), map[string]any{"data_path": 3}); err == nil {
		t.Error("a non-string data_path should fail")
	}
	_, err := b.Load(context.Background(), newLoader(t.TempDir()), map[string]any{"data_path": "missing.jsonl"})
	if err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: error %v should name it", err)
	}
	p := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(p, []byte(`{"question":"q"}`+"\n"), 0o644)
	if _, err := b.Load(context.Background(), newLoader(""), map[string]any{"data_path": p}); err == nil || !strings.Contains(err.Error(), `"answer"`) {
		t.Errorf("missing field: error %v should name it", err)
	}
}
