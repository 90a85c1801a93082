package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
	prov "github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/rundir"
)

func renderCard(t *testing.T, suite []*metrics.Bundle, f Format, o ModelCardOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, suite, f, Options{ModelCard: o}); err != nil {
		t.Fatalf("Render(%s): %v", f, err)
	}
	return buf.String()
}

const (
	gsmHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	gsmHex  = "1111111111111111111111111111111111111111111111111111111111111111"
)

// The whole card of one benchmark, every number derived by hand from the
// fixture: pass@1 0.812 → 81.2; CLT 0.7911–0.8329 → 79.1–83.3, half-width
// (0.8329 − 0.7911)/2 = 0.0209 → 2.1; 500 items × 4 repeats; 8 of the
// 2,000 samples were infrastructure failures, so 2,000 − 8 = 1,992 were
// scored.
func TestModelCardMarkdown(t *testing.T) {
	gsm := testSuite()[0]
	gsm.Provenance.Serving = []prov.Serving{
		{Service: "llm", Role: "model", Engine: "vllm", ServerVersion: "0.8.5"},
		{Service: "judge", Role: "judge", Engine: "api"},
	}
	got := renderCard(t, []*metrics.Bundle{gsm}, ModelCard, ModelCardOptions{
		Store: "https://store.example/nel/", RunID: "20250501T100000Z-22222222",
	})
	want := "## Model card: meta/llama-3.1-8b-instruct\n" +
		"\n" +
		"| Benchmark | Score | 95% CI | n | Category |\n" +
		"|---|---:|---:|---:|---|\n" +
		"| gsm8k | 81.2 ± 2.1 | 79.1–83.3 | 500 × 4 | Mathematics |\n" +
		"\n" +
		"gsm8k: 8 of 2,000 samples failed for infrastructure reasons and are not scored; the score is over the other 1,992.  \n" +
		"\n" +
		"Score is the headline (pass@1 for binary scores, mean reward otherwise) in percent; " +
		"± is the half-width of the 95% interval over items (repeats stay with their item; " +
		"Wilson's for binary rewards, Student t's otherwise), which the 95% CI column gives as lo–hi; " +
		"−a/+b are its distances below and above the score where they differ. n is items × repeats.\n" +
		"\n" +
		"Recipe `" + gsmHash + "` · nel v0.4.0 (scoring version 3) · served by vllm 0.8.5 · 2025-05-01  \n" +
		"Published run: <https://store.example/nel/results/" + gsmHex + "/20250501T100000Z-22222222/>  \n" +
		"Reproduce: `nel reproduce " + gsmHash + " --store https://store.example/nel/`  \n"
	if got != want {
		t.Errorf("model card:\n%s\nwant:\n%s", got, want)
	}
}

// The fixture suite: several models, a simulated benchmark that is
// INVALID, a clustered interval, an empty benchmark and four recipe
// hashes.
func TestModelCardSuite(t *testing.T) {
	got := renderCard(t, testSuite(), ModelCard, ModelCardOptions{})
	mustContain(t, "card", got,
		"## Model card: several models\n",
		"| Benchmark | Score | 95% CI | n | Category | Recipe |\n",
		"| gsm8k | 81.2 ± 2.1 | 79.1–83.3 | 500 × 4 | Mathematics | `"+gsmHash+"` |\n",
		// INVALID: no score (its pass@1 0.75 is not a result), no interval.
		"| humaneval | INVALID | n/a | 2 × 2 | Coding | `sha256:eeee` |\n",
		"INVALID humaneval: 1 of 4 samples (25%) failed for infrastructure reasons (server\\_error 1), more than max\\_error\\_rate 5%; no result is reported.  \n",
		// 0.4567 → 45.7; clustered CLT 0.4102–0.5032: half-width 0.0465 → 4.7
		// (half up); "math" is no built-in benchmark.
		"| math\\#cot | 45.7 ± 4.7 | 41.0–50.3 (clustered) | 300 × 1 | — | `sha256:aaaa` |\n",
		"| mmlu\\_pro | n/a | n/a | 0 × 1 | Knowledge | `sha256:ffff` |\n",
		"(clustered) marks a clustered standard error",
		// Footer without a recipe: each row names its own.
		"\nnel v0.4.0, dev (scoring version 3) · 2025-05-01  \n",
		"Not published: no store given",
	)
	mustNotContain(t, "card", got, "Recipe `", "Published run", "Reproduce:", "NaN", "75.0")
	warn := strings.Index(got, "> **⚠ SIMULATED endpoint")
	table := strings.Index(got, "| Benchmark |")
	if warn < 0 || warn > table {
		t.Errorf("the simulated warning (at %d) must come before the table (at %d):\n%s", warn, table, got)
	}
	mustContain(t, "card", got, "Affected: `humaneval`.")

	// With a store, one reproduce command per recipe hash; no link, since
	// the run's recipe hash is ambiguous.
	got = renderCard(t, testSuite(), ModelCard, ModelCardOptions{Store: "/srv/nel store", RunID: "r1"})
	mustContain(t, "card", got,
		"Reproduce: `nel reproduce sha256:eeee --store '/srv/nel store'`",
		"Reproduce: `nel reproduce sha256:ffff --store '/srv/nel store'`")
	mustNotContain(t, "card", got, "Published run")

	if got := renderCard(t, nil, ModelCard, ModelCardOptions{}); got != "## Model card: unknown model\n\nNo benchmarks.\n" {
		t.Errorf("empty card = %q", got)
	}
}

func TestModelCardRounding(t *testing.T) {
	for x, want := range map[float64]string{
		0.812: "81.2", 0.0465: "4.7", 0.0015: "0.2", 0.00149: "0.1", 1: "100.0", 0: "0.0", -0.0001: "0.0", 0.99951: "100.0",
	} {
		if got := pct1(x); got != want {
			t.Errorf("pct1(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestModelCardCategories(t *testing.T) {
	// Overrides by key (math#cot) and by name (gsm8k) win over what the
	// results carry; the others keep theirs.
	got := renderCard(t, testSuite(), ModelCard, ModelCardOptions{Categories: map[string]string{
		"math#cot": "Competition math", "gsm8k": "Grade-school math", "nope": "x",
	}})
	mustContain(t, "card", got, "| 500 × 4 | Grade-school math |", "| 300 × 1 | Competition math |", "| 2 × 2 | Coding |")
}

func TestModelCardFormats(t *testing.T) {
	for in, want := range map[string]Format{"model-card": ModelCard, "Model-Card-HTML": ModelCardHTML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if FileName(ModelCard) != "model-card.md" || FileName(ModelCardHTML) != "model-card.html" {
		t.Errorf("FileName: %q, %q", FileName(ModelCard), FileName(ModelCardHTML))
	}
	dir := t.TempDir()
	paths, err := WriteFiles(dir, testSuite(), []Format{ModelCard}, Options{})
	if err != nil || len(paths) != 1 {
		t.Fatalf("WriteFiles = %q, %v", paths, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "model-card.md"))
	mustContain(t, "model-card.md", string(data), "## Model card: several models")

	// The HTML card is htmlreport.RenderModelCard's alone (see
	// ErrModelCardHTML), and
	// WriteFiles refuses it before writing anything.
	if err := Render(&bytes.Buffer{}, testSuite(), ModelCardHTML, Options{}); !errors.Is(err, ErrModelCardHTML) {
		t.Errorf("Render(ModelCardHTML) = %v, want ErrModelCardHTML", err)
	}
	empty := t.TempDir()
	if _, err := WriteFiles(empty, testSuite(), []Format{ModelCard, ModelCardHTML}, Options{}); !errors.Is(err, ErrModelCardHTML) {
		t.Errorf("WriteFiles(ModelCardHTML) = %v, want ErrModelCardHTML", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("WriteFiles wrote %d files before refusing", len(entries))
	}
}

func TestPublished(t *testing.T) {
	dir := t.TempDir()
	if p, err := ReadPublished(dir); p != nil || err != nil {
		t.Fatalf("ReadPublished without the file = %v, %v; want nil, nil", p, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".nel"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".nel", "published.json")
	if got := rundir.Dir(dir).Published(); got != path {
		t.Fatalf("rundir's published-run record is %s, want %s", got, path)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPublished(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadPublished of a corrupt file = %v; want an error naming %s", err, path)
	}
	const rec = `{"store": "https://a.example/store", "recipe_hash": "` + gsmHash + `", "run_id": "run-a", "url": "https://cdn.example/a/run-a/"}`
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPublished(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *p != (Published{Store: "https://a.example/store", RecipeHash: gsmHash, RunID: "run-a", URL: "https://cdn.example/a/run-a/"}) {
		t.Fatalf("ReadPublished = %+v", *p)
	}

	gsm := testSuite()[:1]
	if err := CheckPublished(gsm, p); err != nil {
		t.Errorf("CheckPublished of the run's own record: %v", err)
	}
	stale := &Published{RecipeHash: "sha256:" + strings.Repeat("0", 64)}
	if err := CheckPublished(gsm, stale); err == nil || !strings.Contains(err.Error(), stale.RecipeHash) || !strings.Contains(err.Error(), gsmHash) {
		t.Errorf("CheckPublished of another recipe's record = %v; want an error naming both hashes", err)
	}
	if err := CheckPublished(gsm, nil); err != nil {
		t.Errorf("CheckPublished(nil) = %v", err)
	}

	for _, c := range []struct {
		name        string
		flags       ModelCardOptions
		link, store string
	}{
		// The file alone: its recorded URL.
		{"file", ModelCardOptions{}, "https://cdn.example/a/run-a/", "https://a.example/store"},
		// Flags naming what the file says change nothing.
		{"same", ModelCardOptions{Store: "https://a.example/store", RunID: "run-a"}, "https://cdn.example/a/run-a/", "https://a.example/store"},
		// Another store: the link is built there, with the file's run id.
		{"store", ModelCardOptions{Store: "https://b.example/s"}, "https://b.example/s/results/" + gsmHex + "/run-a/", "https://b.example/s"},
		// Another run id: the file's store, the flag's run.
		{"run", ModelCardOptions{RunID: "run-b"}, "https://a.example/store/results/" + gsmHex + "/run-b/", "https://a.example/store"},
		{"both", ModelCardOptions{Store: "/srv/s", RunID: "run-c"}, "/srv/s/results/" + gsmHex + "/run-c/", "/srv/s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.flags.WithPublished(p)
			card := BuildModelCard(gsm, o)
			if card.Published != c.link {
				t.Errorf("link = %q, want %q", card.Published, c.link)
			}
			if want := "nel reproduce " + gsmHash + " --store " + c.store; len(card.Reproduce) != 1 || card.Reproduce[0] != want {
				t.Errorf("reproduce = %q, want %q", card.Reproduce, want)
			}
		})
	}
}

func TestModelCardDates(t *testing.T) {
	suite := testSuite()[:1]
	b := *suite[0]
	b.Provenance.StartedAt, b.Provenance.EndedAt = "2025-04-30T23:00:00-02:00", "2025-05-03T08:00:00Z"
	c := BuildModelCard([]*metrics.Bundle{suite[0], &b}, ModelCardOptions{})
	if last := c.Footer[len(c.Footer)-1]; last != "2025-05-01 – 2025-05-03" {
		t.Errorf("date range %q, want 2025-05-01 – 2025-05-03 (UTC)", last)
	}
}

// A row whose interval is neither over items nor clustered names its
// method in brackets, and the footnote says what each such method is; a
// name this nel does not know is named without a description.
func TestModelCardNamedMethods(t *testing.T) {
	all := testSuite()
	suite := []*metrics.Bundle{all[0], all[2]} // gsm8k, math: valid, with intervals
	for i, m := range []metrics.Method{"jeffreys_ratio", "wilson_someday"} {
		h := view.HeadlineScore(suite[i])
		if h.CLT == nil {
			t.Fatalf("fixture %d's headline has no interval", i)
		}
		h.CLT.Method = m
	}
	c := BuildModelCard(suite, ModelCardOptions{})
	if !strings.HasSuffix(c.Rows[0].CI, " (jeffreys_ratio)") || !strings.HasSuffix(c.Rows[1].CI, " (wilson_someday)") {
		t.Errorf("rows' CI %q, %q", c.Rows[0].CI, c.Rows[1].CI)
	}
	want := " A method in brackets marks an interval computed otherwise: jeffreys_ratio is Jeffreys' interval on Korn & Graubard's effective sample size of a ratio of sums over items (the delta method's standard error); wilson_someday."
	if !strings.HasSuffix(c.Footnote, want) {
		t.Errorf("footnote %q\nwant it to end %q", c.Footnote, want)
	}
}

// pass@k's Beta-binomial interval (a recipe whose primary metric is
// pass@k) is an interval over items like pass@1's: no method in
// brackets, no footnote naming it.
func TestModelCardBetaBinomialHeadline(t *testing.T) {
	gsm := testSuite()[0]
	h := view.HeadlineScore(gsm)
	if h.CLT == nil {
		t.Fatal("the fixture's headline has no interval")
	}
	h.CLT.Method = "jeffreys_betabinomial"
	got := renderCard(t, []*metrics.Bundle{gsm}, ModelCard, ModelCardOptions{})
	if !strings.Contains(got, "| gsm8k | 81.2 ± 2.1 | 79.1–83.3 | 500 × 4 |") || strings.Contains(got, "jeffreys_betabinomial") {
		t.Errorf("model card:\n%s", got)
	}
}

// An interval whose bundle names no method (an older nel's) is marked by
// its empty brackets, as before, and adds no empty name to the footnote.
func TestModelCardNoMethod(t *testing.T) {
	gsm := testSuite()[0]
	h := view.HeadlineScore(gsm)
	if h.CLT == nil {
		t.Fatal("the fixture's headline has no interval")
	}
	h.CLT.Method = ""
	c := BuildModelCard([]*metrics.Bundle{gsm}, ModelCardOptions{})
	if strings.Contains(c.Footnote, "computed otherwise") {
		t.Errorf("footnote names a method: %q", c.Footnote)
	}
}
