// Package catalog is what a recipe may name, for nel list: the built-in
// benchmarks (their data, size, scorer and category), the benchmark and
// dataset sources nel knows and which it runs yet, and the scorers a
// recipe's scoring.metrics may use. It reads runtime/bench, runtime/score
// and the compiler's source list; it adds nothing to nel-run.
package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/score"
)

// Benchmark is one built-in benchmark as nel list shows it. The JSON field
// names are part of nel list --format json's contract.
type Benchmark struct {
	Name     string `json:"name"`
	Category string `json:"category"`
	// Source is the default dataset spec (params.data_path replaces it).
	Source string `json:"source"`
	// Items is the item count of Source as published; null when nel does
	// not know it without downloading the data.
	Items *int `json:"items"`
	// Scorer is the default scoring method.
	Scorer string `json:"scorer"`
	// NeedsSandbox: the benchmark runs the model's code (a sandbox is
	// required); NeedsJudge: it is scored by an LLM judge metric.
	NeedsSandbox bool `json:"needs_sandbox"`
	NeedsJudge   bool `json:"needs_judge"`
}

// Scorer is one scorer a recipe may name in scoring.metrics.
type Scorer struct {
	Name  string `json:"name"`
	About string `json:"about"`
}

// Benchmarks lists the built-in benchmarks, by name.
func Benchmarks() []Benchmark {
	var out []Benchmark
	for _, name := range bench.Names() {
		b, _ := bench.Lookup(name)
		e := Benchmark{Name: b.Name, Category: b.Category, Source: b.Source, Scorer: b.Scorer,
			NeedsSandbox: b.NeedsSandbox, NeedsJudge: b.Scorer == "needs_judge"}
		if b.Size > 0 {
			n := b.Size
			e.Items = &n
		}
		out = append(out, e)
	}
	return out
}

// Scorers lists the scorers of scoring.metrics ({type: "scorer", name:
// NAME}), by name. A benchmark scores with its own default besides them
// (scoring.include_defaults).
func Scorers() []Scorer {
	about := scorerAbout()
	var out []Scorer
	for _, name := range score.Names() {
		out = append(out, Scorer{Name: name, About: about[name]})
	}
	return out
}

// scorerAbout says in a line what each scorer does (NeMo Evaluator's
// scorers of the same names; runtime/score has the details).
func scorerAbout() map[string]string {
	return map[string]string{
		"exact_match":       "the whole response, normalized, equals the answer",
		"fuzzy_match":       "the normalized response contains an answer, or an answer contains it",
		"multichoice_regex": "the letter after 'Answer:' (A-D), NeMo's pattern, first match",
		"mcq_extract":       "a choice letter found in the response by a cascade of patterns",
		"mcq_robust":        "a choice letter, tolerant of markup such as 'Answer: **(B)**'",
		"answer_line":       "the rest of the line after 'The answer is' or 'Answer:' (else the last line), normalized as math",
		"numeric_match":     "the last number of the response equals the answer",
	}
}

// Write prints what list names (benchmarks, sources or scorers) to w, as
// a table (format "text") or JSON ("json": {"benchmarks": [...]}, or
// "sources", or "scorers").
func Write(w io.Writer, list, format string) error {
	var rows any
	switch list {
	case "benchmarks":
		rows = Benchmarks()
	case "sources":
		rows = compiler.Sources()
	case "scorers":
		rows = Scorers()
	default:
		return fmt.Errorf("list: unknown list %q", list)
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]any{list: rows})
	case "text":
		return writeText(w, rows)
	}
	return fmt.Errorf("list: unknown format %q: want text or json", format)
}

func writeText(w io.Writer, rows any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch rows := rows.(type) {
	case []Benchmark:
		fmt.Fprintln(tw, "NAME\tCATEGORY\tITEMS\tSCORER\tSOURCE")
		for _, b := range rows {
			items := "unknown"
			if b.Items != nil {
				items = strconv.Itoa(*b.Items)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Name, b.Category, items, b.Scorer, b.Source)
		}
		tw.Flush()
		_, err := fmt.Fprint(w, "\nITEMS is the default source's size as published; unknown: nel does not know it\n"+
			"without downloading the data. Try one: nel run --bench NAME --model-url URL --model-id ID\n")
		return err
	case []compiler.SourceKind:
		fmt.Fprintln(tw, "FIELD\tFORM\tSUPPORTED\tWHAT")
		for _, k := range rows {
			yes := "not supported yet"
			if k.Supported {
				yes = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Field, k.Form, yes, k.About)
		}
	case []Scorer:
		fmt.Fprintln(tw, "NAME\tWHAT")
		for _, s := range rows {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.About)
		}
		tw.Flush()
		_, err := fmt.Fprint(w, "\nIn a recipe: scoring: metrics: [{type: \"scorer\", name: NAME}], beside the benchmark's own\n"+
			"scorer (scoring.include_defaults); an LLM judge is {type: \"judge\", name: N, service: S}.\n")
		return err
	}
	return tw.Flush()
}
