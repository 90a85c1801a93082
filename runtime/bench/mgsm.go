package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/score"
)

// mgsmLangs is NeMo's load order, which fixes problem indices.
var mgsmLangs = [...]string{"en", "de", "fr", "es", "ru", "zh", "ja", "th", "te", "bn", "sw"}

// mgsmInstruction returns NeMo's per-language instruction (verbatim; the
// non-European languages get an English sentence) and the answer label it
// asks for, which Respond uses.
func mgsmInstruction(lang string) (prefix, label string) {
	const other = "Solve this math problem step by step. Final answer as 'Answer:'.\n\n"
	switch lang {
	case "en":
		return "Solve this math problem. Give reasoning steps then the final answer on the last line as 'Answer:'.\n\n", "Answer:"
	case "de":
		return "Lose dieses Problem. Gib Schritte an, dann die Antwort als 'Antwort:'.\n\n", "Antwort:"
	case "fr":
		return "Resolvez ce probleme. Donnez les etapes puis la reponse comme 'Reponse:'.\n\n", "Reponse:"
	case "es":
		return "Resuelve este problema. Da los pasos y la respuesta como 'Respuesta:'.\n\n", "Respuesta:"
	case "ru":
		return "Reshite etu zadachu. Privedite shagi, zatem otvet kak 'Otvet:'.\n\n", "Otvet:"
	}
	return other, "Answer:"
}

var mgsmFile = regexp.MustCompile(`^mgsm_([a-z]{2})\.tsv(?:\.gz)?$`)

func mgsm() *Benchmark {
	var defaults []string
	for _, l := range mgsmLangs {
		defaults = append(defaults, "hf://juletxara/mgsm?config="+l+"&split=test")
	}
	return &Benchmark{
		Name:     "mgsm",
		Category: "Multilingual math",
		// Load expands the source into its 11 per-language configs
		// (?config=<lang>&split=test), in mgsmLangs order.
		Source: "hf://juletxara/mgsm?split=test",
		Scorer: "numeric_match",
		Size:   2750,
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			// The local TSV files have no header; Hub Parquet ignores Columns.
			dss, err := load(ctx, l, params, dataset.LoadOptions{Columns: []string{"question", "answer"}}, defaults...)
			if err != nil {
				return nil, fmt.Errorf("mgsm: %w", err)
			}
			type langRows struct {
				lang string
				rows []row
			}
			var groups []langRows
			for di, ds := range dss {
				for _, p := range ds.Parts {
					lang := mgsmLang(p.Name)
					if lang == "" && len(dss) == len(mgsmLangs) {
						lang = mgsmLangs[di] // Hub: one spec per language
					}
					g := langRows{lang: lang}
					for i, rec := range p.Records {
						g.rows = append(g.rows, row{rec: rec, part: p.Name, spec: ds.Spec, origin: p.Where(i)})
					}
					groups = append(groups, g)
				}
			}
			// Files of a directory come sorted by name; NeMo's order is
			// mgsmLangs, and Index follows it so hub and local agree.
			rank := func(lang string) int {
				if i := slices.Index(mgsmLangs[:], lang); i >= 0 {
					return i
				}
				return len(mgsmLangs)
			}
			slices.SortStableFunc(groups, func(a, b langRows) int { return rank(a.lang) - rank(b.lang) })

			var items []Item
			i := 0
			for _, g := range groups {
				for _, r := range g.rows {
					lang := g.lang
					if v, _, ok := field(r.rec, "language", "lang"); ok {
						lang = text(v)
					}
					if lang == "" {
						return nil, fmt.Errorf("mgsm: %s: cannot tell the language (name files mgsm_<lang>.tsv or add a \"language\" field)", r.where(i))
					}
					q, err := need(r, i, "question")
					if err != nil {
						return nil, fmt.Errorf("mgsm: %w", err)
					}
					// Hub rows carry answer_number (and a null "answer" on
					// the test split); the TSV files a bare answer column.
					num, err := need(r, i, "answer_number", "answer")
					if err != nil {
						return nil, fmt.Errorf("mgsm: %w", err)
					}
					// The TSV files write thousands with commas ("2,125");
					// the Hub's answer_number is the int (the dataset script
					// parses the column with the commas removed), so both
					// copies give the same target and content.
					num = strings.ReplaceAll(score.PyStrip(num), ",", "")
					prefix, _ := mgsmInstruction(lang)
					// NeMo's target: str(answer_number).rstrip("0").rstrip(".")
					// (so 150 is stored as "15"; numeric_match strips the
					// response's number the same way).
					exp := strings.TrimRight(strings.TrimRight(num, "0"), ".")
					items = append(items, r.located(userItem(0, lang, prefix+q, exp,
						map[string]any{"answer_number": num, "language": lang},
						map[string]any{"question": q, "answer": num, "language": lang})))
					i++
				}
			}
			return finish(items, dss...), nil
		},
		Score: func(it *Item, response string) Score {
			r := score.NumericMatch(response, it.Expected)
			return binary("numeric_match", r.Correct, r.Extracted, map[string]any{"pattern": score.NumberPattern})
		},
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			rng = rngOr(rng)
			num, _ := it.Meta["answer_number"].(string)
			if num == "" {
				num = it.Expected
			}
			_, label := mgsmInstruction(it.Category)
			if !correct {
				w := wrongNumber(num, rng)
				for score.NumericMatch(w, it.Expected).Correct {
					w = wrongNumber(w, rng) // 10 and 100 compare equal after rstrip("0")
				}
				num = w
			}
			return reasoning(rng) + "\nCombining the quantities from the problem gives the result.\n" + label + " " + num
		},
	}
}

// mgsmLang returns the language of an MGSM file name, if it has one.
func mgsmLang(name string) string {
	if m := mgsmFile.FindStringSubmatch(path.Base(name)); m != nil {
		return m[1]
	}
	return ""
}
