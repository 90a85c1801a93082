package ifeval

import (
	"github.com/nel-eval/nel/internal/sharedtest"

	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sharedIFEval is ../shared/datasets/ifeval; tests that need it skip when
// it is absent.
func sharedIFEval(t testing.TB) string { return sharedtest.Datasets(t, "ifeval") }

func readJSONL(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// inputItem is one row of input_data.jsonl.
type inputItem struct {
	key    float64
	prompt string
	ids    []string
	kwargs []map[string]any
}

func readInputs(t testing.TB) []inputItem {
	t.Helper()
	var out []inputItem
	for _, m := range readJSONL(t, filepath.Join(sharedIFEval(t), "input_data.jsonl")) {
		it := inputItem{key: m["key"].(float64), prompt: m["prompt"].(string)}
		for _, id := range m["instruction_id_list"].([]any) {
			it.ids = append(it.ids, id.(string))
		}
		for _, kw := range m["kwargs"].([]any) {
			it.kwargs = append(it.kwargs, kw.(map[string]any))
		}
		out = append(out, it)
	}
	return out
}

// TestEveryInstructionHasChecker enumerates the ids in input_data.jsonl.
func TestEveryInstructionHasChecker(t *testing.T) {
	seen := map[string]bool{}
	for _, it := range readInputs(t) {
		for i, id := range it.ids {
			seen[id] = true
			if _, err := Check(id, it.kwargs[i], it.prompt, "x"); err != nil {
				t.Errorf("key %v: %v", it.key, err)
			}
		}
	}
	if len(seen) != 25 {
		t.Errorf("input_data.jsonl has %d instruction ids, want 25", len(seen))
	}
	for id := range seen {
		if !Supported(id) {
			t.Errorf("no checker for %s", id)
		}
	}
}

// knownDisagreements are the instructions where our verdict differs from
// the official scorer's on GPT-4's responses, keyed "mode key id", with the
// reason found on investigation.
var knownDisagreements = map[string]string{
	"strict 1122 keywords:letter_frequency":    letterNotLetter,
	"strict 1129 keywords:letter_frequency":    letterNotLetter,
	"strict 279 change_case:english_lowercase": shortLatin,
	"loose 279 change_case:english_lowercase":  shortLatin,
	"strict 3617 change_case:english_capital":  shortLatin,
	"loose 3617 change_case:english_capital":   shortLatin,
	"strict 3456 change_case:english_capital":  namesList,
	"loose 3456 change_case:english_capital":   namesList,
}

const (
	letterNotLetter = "the letter kwarg is not a letter ('#', '!'); the scorer version that " +
		"produced the reference replaced such a letter with a random ASCII letter (an ord() range " +
		"check since removed upstream), so its verdict is a coin toss; we count the given character, " +
		"as current upstream does, and the response has enough of it"
	shortLatin = "a few words with no sentence (a title, three product names): trigram " +
		"identifiers are guesses on so little text; langdetect's guess was English, whatlanggo's " +
		"is Dutch or Spanish"
	namesList = "an all-caps list of first and last names, which carry no language: whatlanggo " +
		"calls it English, langdetect called it something else"
)

// TestOfficialAgreement replays GPT-4's published responses through
// Evaluate and compares with the official scorer's verdicts.
func TestOfficialAgreement(t *testing.T) {
	dir := sharedIFEval(t)
	keys := map[string]inputItem{}
	for _, it := range readInputs(t) {
		keys[it.prompt] = it
	}
	for _, mode := range []string{"strict", "loose"} {
		rows := readJSONL(t, filepath.Join(dir, "reference", "official_scorer_"+mode+".jsonl"))
		agree, total, promptOK, instOK, officialPrompt := 0, 0, 0, 0, 0
		var dis []string
		for _, r := range rows {
			prompt := r["prompt"].(string)
			it, ok := keys[prompt]
			if !ok {
				t.Fatalf("%s: prompt not in input_data.jsonl: %.60q", mode, prompt)
			}
			v, err := Evaluate(it.ids, it.kwargs, prompt, r["response"].(string))
			if err != nil {
				t.Fatal(err)
			}
			got := v.Strict
			all := v.StrictAll
			if mode == "loose" {
				got, all = v.Loose, v.LooseAll
			}
			if all {
				promptOK++
			}
			if r["follow_all_instructions"].(bool) {
				officialPrompt++
			}
			for i, w := range r["follow_instruction_list"].([]any) {
				total++
				if got[i] {
					instOK++
				}
				if got[i] == w.(bool) {
					agree++
					continue
				}
				k := mode + " " + fmtKey(it.key) + " " + it.ids[i]
				dis = append(dis, k)
				t.Logf("disagreement %s: ours %v, official %v; reason: %s", k, got[i], w, knownDisagreements[k])
			}
		}
		sort.Strings(dis)
		n := float64(len(rows))
		rate := float64(agree) / float64(total)
		t.Logf("%s: %d prompts, %d instructions; agreement %d/%d = %.2f%%; prompt-level ours %.2f%% official %.2f%%; instruction-level ours %.2f%%",
			mode, len(rows), total, agree, total, 100*rate, 100*float64(promptOK)/n, 100*float64(officialPrompt)/n, 100*float64(instOK)/float64(total))
		if rate < 0.99 {
			t.Errorf("%s: agreement %.2f%% < 99%%:\n%s", mode, 100*rate, strings.Join(dis, "\n"))
		}
		for _, k := range dis {
			if knownDisagreements[k] == "" {
				t.Errorf("uninvestigated disagreement %s", k)
			}
		}
		if mode == "strict" {
			if d := 100*float64(promptOK)/n - 76.85; d > 0.5 || d < -0.5 {
				t.Errorf("prompt-level strict %.2f%%, want within 0.5 of 76.85%%", 100*float64(promptOK)/n)
			}
		}
	}
}

func fmtKey(k float64) string { return strconv.FormatFloat(k, 'f', -1, 64) }
