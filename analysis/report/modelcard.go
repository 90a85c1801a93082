package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// A model card publishes a table of numbers (benchmark, accuracy,
// category). nel's version makes each number checkable: the score with the
// half-width of its interval, the interval, the design (items × repeats),
// the recipe hash that fixes the methodology, and the address of the
// published run, so a reader can fetch the recipe and run it again
// (nel reproduce).

// ModelCardOptions are the model card's links and categories.
type ModelCardOptions struct {
	// Store is the recipe store the run was published to (a URL or a
	// directory), RunID the published run's id and RecipeHash its recipe
	// hash ("sha256:<hex>"; empty: the suite's own). With Store the card
	// says how to reproduce it; with all three it links the published run,
	// at Store/results/<hex>/<run-id>/.
	Store, RunID, RecipeHash string
	// URL is the published run's address as nel publish recorded it; when
	// set it is the link, in place of the one built from Store.
	URL string
	// Categories override the benchmarks' model-card categories, by
	// benchmark key (gsm8k#cot) or name (gsm8k). Without one the category
	// is the built-in benchmark's (bench.Benchmark.Category), or "—".
	Categories map[string]string
	// Reference are the values the model's own card publishes
	// (modelcard_reference.go): with any, a column puts each beside
	// nel's number, and the card lists their sources.
	Reference []ReferenceValue
}

// Published is what nel publish records in a run folder
// (rundir.Dir.Published) about where it published the run.
type Published struct {
	Store      string `json:"store"`
	RecipeHash string `json:"recipe_hash"`
	RunID      string `json:"run_id"`
	URL        string `json:"url"`
}

// ReadPublished reads runDir's published-run record; it returns nil and no error
// when the run was never published.
func ReadPublished(runDir string) (*Published, error) {
	path := rundir.Dir(runDir).Published()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var p Published
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not a published-run record (%w); remove it or publish the run again with nel publish", path, err)
	}
	return &p, nil
}

// CheckPublished reports an error when p records a recipe hash that none
// of suite's bundles carries: then p describes another recipe's run.
func CheckPublished(suite []*metrics.Bundle, p *Published) error {
	if p == nil || p.RecipeHash == "" {
		return nil
	}
	var hashes []string
	for _, b := range suite {
		if b.Provenance.RecipeHash == p.RecipeHash {
			return nil
		}
		hashes = addDistinct(hashes, b.Provenance.RecipeHash)
	}
	if len(hashes) == 0 {
		return nil // the bundles carry no hash to check against
	}
	return fmt.Errorf("it records recipe %s, but the results here are of recipe %s; publish this run with nel publish", p.RecipeHash, strings.Join(hashes, ", "))
}

// WithPublished returns o with what p records filling the fields o leaves
// empty: o's fields (the command line's flags) win. p's URL is kept only
// when o names the same store and run (or none).
func (o ModelCardOptions) WithPublished(p *Published) ModelCardOptions {
	if p == nil {
		return o
	}
	if o.URL == "" && (o.Store == "" || o.Store == p.Store) && (o.RunID == "" || o.RunID == p.RunID) {
		o.URL = p.URL
	}
	if o.Store == "" {
		o.Store = p.Store
	}
	if o.RunID == "" {
		o.RunID = p.RunID
	}
	if o.RecipeHash == "" {
		o.RecipeHash = p.RecipeHash
	}
	return o
}

// ModelCardData is what both model-card formats show, as plain text; each
// format escapes it its own way (the HTML one is htmlreport's).
type ModelCardData struct {
	Model     string
	Simulated []string // keys of the simulated benchmarks
	Warning   string
	Level     string // "95% CI"
	Rows      []ModelCardRow
	// PerRow says the bundles carry several recipe hashes: each row names
	// its own, and the footer none.
	PerRow    bool
	Footer    []string // "Recipe sha256:…" first when one hash, then versions, serving, dates
	Hash      string   // the one recipe hash, when one
	Footnote  string
	Published string   // the published run's address, "" when unknown
	Reproduce []string // nel reproduce commands, one per recipe hash
	// NotPublished explains the missing links when no store is known.
	NotPublished string
	// References are the reference values' sources, one line per value
	// the table shows; with none the table has no reference column.
	References []string
	// Validity says, per benchmark, what the table cannot: an INVALID
	// benchmark (no result: its row's score says INVALID) and the
	// infrastructure failures a valid one left unscored.
	Validity []string
}

// ModelCardRow is one benchmark's row of the card.
type ModelCardRow struct {
	Benchmark, Score, CI, N, Category, Recipe string
	// Reference is the model card's published value ("78.3"), "—" when
	// it publishes none for the benchmark.
	Reference string
}

const noCategory = "—"

// BuildModelCard is what suite's model card says, for the formats to
// escape: the markdown card here, the HTML one in htmlreport.
func BuildModelCard(suite []*metrics.Bundle, o ModelCardOptions) *ModelCardData {
	c := &ModelCardData{Model: cardModel(suite), Warning: view.SimulatedWarning, Level: view.CILevel(suite)}
	var s cardSources
	for _, b := range suite {
		if b.Provenance.Simulated {
			c.Simulated = append(c.Simulated, view.Key(b))
		}
		s.add(b.Provenance)
		c.addRow(b, o.Categories, &s)
		c.addReference(b, o.Reference)
	}
	c.PerRow = len(s.hashes) > 1
	if len(s.hashes) == 1 {
		c.Hash = s.hashes[0]
		c.Footer = append(c.Footer, "Recipe "+c.Hash)
	}
	c.Footer = append(c.Footer, s.footer()...)
	c.Footnote = footnote(c.Level, s.clustered, s.otherMethods)
	c.links(suite, o, s.hashes)
	return c
}

// cardSources gathers what the footer and footnote say about the suite's
// bundles: the distinct recipes, versions and servers, the time span, and
// which interval methods the rows use.
type cardSources struct {
	hashes, nels, scorings, served []string
	first, last                    time.Time
	clustered                      bool             // a row's interval is clustered
	otherMethods                   []metrics.Method // interval methods the card names in brackets
}

// add notes one bundle's provenance.
func (s *cardSources) add(p metrics.Provenance) {
	s.hashes = addDistinct(s.hashes, p.RecipeHash)
	s.nels = addDistinct(s.nels, p.NelVersion)
	s.scorings = addDistinct(s.scorings, p.ScoringVersion)
	for _, sv := range p.Serving {
		if sv.Role != "" && sv.Role != "model" || sv.Engine == "" {
			continue
		}
		s.served = addDistinct(s.served, strings.TrimSpace(sv.Engine+" "+sv.ServerVersion))
	}
	if t, err := time.Parse(time.RFC3339, p.StartedAt); err == nil && (s.first.IsZero() || t.Before(s.first)) {
		s.first = t
	}
	if t, err := time.Parse(time.RFC3339, p.EndedAt); err == nil && t.After(s.last) {
		s.last = t
	}
}

// footer is the footer's lines after the recipe's: versions, serving,
// dates.
func (s *cardSources) footer() []string {
	var lines []string
	if len(s.nels) > 0 {
		line := "nel " + strings.Join(s.nels, ", ")
		if len(s.scorings) > 0 {
			line += " (scoring version " + strings.Join(s.scorings, ", ") + ")"
		}
		lines = append(lines, line)
	}
	if len(s.served) > 0 {
		lines = append(lines, "served by "+strings.Join(s.served, ", "))
	}
	if !s.first.IsZero() || !s.last.IsZero() {
		lines = append(lines, dateRange(s.first, s.last))
	}
	return lines
}

// addRow adds b's row to the table, and what the table cannot say about
// it to c.Validity; s notes the row's interval method.
func (c *ModelCardData) addRow(b *metrics.Bundle, categories map[string]string, s *cardSources) {
	p := b.Provenance
	h := view.HeadlineScore(b)
	row := ModelCardRow{
		Benchmark: view.Key(b),
		Score:     percent(h.Value),
		CI:        view.NA,
		N:         view.Count(b.Items) + " × " + view.Count(b.Repeats),
		Category:  category(b, categories),
		Recipe:    p.RecipeHash,
	}
	if row.Recipe == "" {
		row.Recipe = view.NA
	}
	switch v := b.Validity; {
	case v.Invalid:
		// Not a result: no number, no interval.
		row.Score = view.Invalid
		c.Validity = append(c.Validity, view.Invalid+" "+row.Benchmark+": "+v.Reason+"; no result is reported.")
		c.Rows = append(c.Rows, row)
		return
	case v.InfraErrors > 0:
		c.Validity = append(c.Validity, fmt.Sprintf("%s: %s of %s samples failed for infrastructure reasons and are not scored; the score is over the other %s.",
			row.Benchmark, view.Count(v.InfraErrors), view.Count(v.Samples), view.Count(v.Samples-v.InfraErrors)))
	}
	if h.Value != nil {
		spread := " ± " + view.NA
		if iv := h.CLT; iv != nil {
			spread = distances(*h.Value, iv)
			row.CI = pct1(iv.Lo) + "–" + pct1(iv.Hi)
			switch iv.Method.Card() {
			case metrics.CardPlain:
			case metrics.CardClustered:
				s.clustered = true
				row.CI += " (clustered)"
			default:
				// A bundle with no method names none in the footnote.
				if iv.Method != "" && !slices.Contains(s.otherMethods, iv.Method) {
					s.otherMethods = append(s.otherMethods, iv.Method)
				}
				row.CI += " (" + string(iv.Method) + ")"
			}
		}
		row.Score += spread
	}
	if p.Simulated {
		row.Score += " (simulated)"
	}
	c.Rows = append(c.Rows, row)
}

// addReference sets the last row's reference value, and notes its source.
func (c *ModelCardData) addReference(b *metrics.Bundle, refs []ReferenceValue) {
	if len(refs) == 0 {
		return
	}
	row := &c.Rows[len(c.Rows)-1]
	row.Reference = noCategory
	r, ok := referenceFor(refs, view.Key(b))
	if !ok {
		return
	}
	row.Reference = strconv.FormatFloat(r.Value, 'f', 1, 64)
	c.References = append(c.References, fmt.Sprintf("%s: %s %s (%s).", row.Benchmark, r.Benchmark, row.Reference, r.Source))
}

// distances is " ± h" for an interval symmetric about the score (as
// printed), else " −a/+b": a Wilson interval near 1 reaches further below
// the score than above it, and a ± would claim room above 100%.
func distances(v float64, iv *metrics.Interval) string {
	down, up := pct1(v-iv.Lo), pct1(iv.Hi-v)
	if down == up {
		return " ± " + up
	}
	return " −" + down + "/+" + up
}

// footnote explains the table's columns for a card whose intervals are at
// level ("95% CI"), marking clustered ones, and describing the other
// methods the rows name in brackets.
func footnote(level string, clustered bool, otherMethods []metrics.Method) string {
	pct := strings.TrimSuffix(level, "CI") // "95% "
	n := "Score is the headline (pass@1 for binary scores, mean reward otherwise) in percent; " +
		"± is the half-width of the " + pct + "interval over items (repeats stay with their item; " +
		"Wilson's for binary rewards, Student t's otherwise), which the " + level + " column gives as lo–hi; " +
		"−a/+b are its distances below and above the score where they differ. n is items × repeats."
	if clustered {
		n += " (clustered) marks a clustered standard error, used where the benchmark's items have clusters."
	}
	if len(otherMethods) > 0 {
		described := make([]string, len(otherMethods))
		for i, m := range otherMethods {
			described[i] = string(m)
			if d := m.Description(); d != "" {
				described[i] += " is " + d
			}
		}
		n += " A method in brackets marks an interval computed otherwise: " + strings.Join(described, "; ") + "."
	}
	return n
}

// links sets where the card's run is published and how to reproduce it,
// hashes being the suite's recipe hashes; or, with no store, why not.
func (c *ModelCardData) links(suite []*metrics.Bundle, o ModelCardOptions, hashes []string) {
	hash := o.RecipeHash
	if hash == "" {
		hash = c.Hash
	}
	switch {
	case o.URL != "":
		c.Published = o.URL
	case o.Store != "" && o.RunID != "":
		if hex, ok := hashHex(hash); ok {
			c.Published = strings.TrimRight(o.Store, "/") + "/results/" + hex + "/" + o.RunID + "/"
		}
	}
	if o.Store != "" {
		repro := hashes
		if o.RecipeHash != "" {
			repro = []string{o.RecipeHash}
		}
		for _, h := range repro {
			c.Reproduce = append(c.Reproduce, "nel reproduce "+shellquote.Quote(h)+" --store "+shellquote.Quote(o.Store))
		}
	} else if len(suite) > 0 {
		c.NotPublished = "Not published: no store given (nel publish the run, or pass --store and --run-id)."
	}
}

// cardModel is the model the suite evaluated.
func cardModel(suite []*metrics.Bundle) string {
	var models []string
	for _, b := range suite {
		models = addDistinct(models, b.Provenance.Model)
	}
	switch len(models) {
	case 0:
		return "unknown model"
	case 1:
		return models[0]
	}
	return "several models"
}

// category is b's model-card category: an override by key or name, the
// one the results carry (the benchmark's definition when it ran), or "—".
func category(b *metrics.Bundle, overrides map[string]string) string {
	for _, k := range []string{view.Key(b), b.Name} {
		if c, ok := overrides[k]; ok && k != "" {
			return c
		}
	}
	if b.Category != "" {
		return b.Category
	}
	return noCategory
}

// percent is a share as a percentage with one decimal, NA when undefined.
func percent(v *float64) string {
	if v == nil {
		return view.NA
	}
	return pct1(*v)
}

// pct1 formats a share as a percentage with one decimal, rounding half up
// as a reader does by hand: 0.0465 is "4.7" even though the nearest double
// to 4.65 lies below it. Binary noise is dropped first (to 1e-6 of a
// tenth) so a decimal tie rounds the same way whatever its binary form.
func pct1(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return view.NA
	}
	tenths := math.Round(math.Round(x*1000*1e6) / 1e6)
	return view.Fix(tenths/10, 1)
}

// dateRange is "2025-05-01" or "2025-05-01 – 2025-05-03", in UTC.
func dateRange(first, last time.Time) string {
	const day = "2006-01-02"
	switch {
	case first.IsZero():
		return last.UTC().Format(day)
	case last.IsZero():
		return first.UTC().Format(day)
	}
	a, b := first.UTC().Format(day), last.UTC().Format(day)
	if a == b {
		return a
	}
	return a + " – " + b
}

// hashHex returns the hex of "sha256:<64 hex>".
func hashHex(h string) (string, bool) {
	hex, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", false
	}
	return hex, true
}

func addDistinct(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func renderModelCard(w io.Writer, suite []*metrics.Bundle, opts Options) error {
	c := BuildModelCard(suite, opts.ModelCard)
	m := &mdWriter{w: bufio.NewWriter(w)}
	m.printf("## Model card: %s\n\n", mdText(c.Model))
	if len(c.Simulated) > 0 {
		names := make([]string, len(c.Simulated))
		for i, s := range c.Simulated {
			names[i] = mdCode(s, false)
		}
		m.printf("> **⚠ %s** Affected: %s.\n\n", c.Warning, strings.Join(names, ", "))
	}
	if len(c.Rows) == 0 {
		m.printf("No benchmarks.\n")
		return m.flush()
	}
	head := []string{"Benchmark", "Score", c.Level, "n", "Category"}
	align := "_rrr_"
	refs := len(c.References) > 0
	if refs {
		head, align = slices.Insert(head, 2, "Model card"), "_rrrr_"
	}
	if c.PerRow {
		head = append(head, "Recipe")
	}
	var rows [][]string
	for _, r := range c.Rows {
		row := []string{mdText(r.Benchmark), mdText(r.Score), mdText(r.CI), r.N, mdText(r.Category)}
		if refs {
			row = slices.Insert(row, 2, mdText(r.Reference))
		}
		if c.PerRow {
			row = append(row, mdCode(r.Recipe, true))
		}
		rows = append(rows, row)
	}
	m.table(head, rows, align)
	for _, r := range c.References {
		m.printf("Model card value of %s  \n", mdText(r))
	}
	if refs {
		m.printf("\n")
	}
	for _, v := range c.Validity {
		m.printf("%s  \n", mdText(v))
	}
	if len(c.Validity) > 0 {
		m.printf("\n")
	}
	m.printf("%s\n\n", mdText(c.Footnote))
	if len(c.Footer) > 0 {
		parts := slices.Clone(c.Footer)
		if c.Hash != "" {
			parts[0] = "Recipe " + mdCode(c.Hash, false)
		}
		for i := range parts {
			if i > 0 || c.Hash == "" {
				parts[i] = mdText(parts[i])
			}
		}
		m.printf("%s  \n", strings.Join(parts, " · "))
	}
	if c.Published != "" {
		m.printf("Published run: %s  \n", mdURL(c.Published))
	}
	for _, r := range c.Reproduce {
		m.printf("Reproduce: %s  \n", mdCode(r, false))
	}
	if c.NotPublished != "" {
		m.printf("%s\n", mdText(c.NotPublished))
	}
	return m.flush()
}

// mdURL is an address as a markdown autolink when it can be one, else as
// a code span.
func mdURL(u string) string {
	if (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " <>\t\n\r`") {
		return "<" + u + ">"
	}
	return mdCode(u, false)
}

// ErrModelCardHTML is returned for ModelCardHTML by Render and
// WriteFiles, which leave it to htmlreport.RenderModelCard: executing an
// html/template makes the linker keep every exported method of every type
// in a binary (text/template calls methods by name), and importing
// html/template at all costs nel-run, which links this package, 70 KB.
var ErrModelCardHTML = errors.New("report: the HTML model card is rendered by htmlreport.RenderModelCard (nel report -f model-card-html)")
