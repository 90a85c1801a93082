package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/pyrand"
	"github.com/nel-eval/nel/runtime/score"
)

// The prompts, verbatim from NeMo Evaluator.
const (
	mmluHead = "Answer the following multiple choice question. The last line of your response " +
		"should be of the following format: 'Answer: $LETTER' (without quotes) where " +
		"LETTER is one of ABCD. Think step by step before answering.\n\n"
	gpqaHead = "Answer the following multiple choice question. The last line of your response " +
		"should be of the following format: 'Answer: $LETTER' (without quotes) where " +
		"LETTER is one of ABCD.\n\n"
	mmluProHead = "Answer the following multiple choice question. The last line of your response " +
		"should be in the following format: 'Answer: $LETTER' where LETTER is one of " +
		"A/B/C/D/E/F/G/H/I/J.\n\n"

	// MMLUPattern is the multichoice_regex pattern of mmlu and gpqa.
	MMLUPattern = score.MultichoicePattern
	// MMLUProPattern is mmlu_pro's.
	MMLUProPattern = `(?i)Answer\s*:\s*([A-J])`
)

// choicePrompt is "{head}{question}\n\nA) ..\nB) ..": the template NeMo
// formats, one line per letter.
func choicePrompt(head, question string, choices []string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(question)
	b.WriteString("\n\n")
	for i, c := range choices {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%c) %s", 'A'+i, c)
	}
	return b.String()
}

// multichoice builds the Score and Respond shared by the letter benchmarks.
//
// Scoring is mcq_robust (score.ExtractChoice: the last committed answer,
// letters limited to the item's options, Meta "letters"), so a reasoning
// model that discusses options before committing is not under-scored.
// NeMo's exact verdict (multichoice_regex: the FIRST "Answer: X") is kept
// as the extra per-row score "scorer:multichoice_regex", so the
// NeMo-parity number is still reported. MMLU-Pro items prepared with
// prompt_style "official" are scored the official way (mmluProOfficial).
func multichoice(b *Benchmark, letters, pattern string) *Benchmark {
	re := score.MustCompilePy(pattern)
	b.Scorer = "mcq_robust"
	b.Score = func(it *Item, response string) Score {
		if it.Meta["prompt_style"] == mmluProStyleOfficial {
			return mmluProOfficialScore(it, response)
		}
		ls := itemLetters(it, letters)
		ex, how := score.ExtractChoice(response, ls)
		nemo := score.MultichoiceRegex(response, it.Expected, re)
		s := binary("mcq_robust", ex != "" && ex == it.Expected, ex, map[string]any{
			"how": how, "letters": ls, "multichoice_regex": nemo.Extracted, "pattern": pattern})
		s.Scores = map[string]float64{"scorer:multichoice_regex": b2f(nemo.Correct)}
		return s
	}
	b.Respond = func(it *Item, correct bool, rng *rand.Rand) string {
		rng = rngOr(rng)
		l := it.Expected
		if !correct {
			l = otherLetter(itemLetters(it, letters), it.Expected, rng)
		}
		if it.Meta["prompt_style"] == mmluProStyleOfficial {
			return reasoning(rng) + " Weighing each option against the question, one of them fits best. The answer is (" + l + ")."
		}
		return reasoning(rng) + "\nWeighing each option against the question, one of them fits best.\nAnswer: " + l
	}
	return b
}

// itemLetters is the item's option letters (Meta "letters"), else the
// benchmark's.
func itemLetters(it *Item, letters string) string {
	if s, ok := it.Meta["letters"].(string); ok && s != "" {
		return s
	}
	return letters
}

func mmlu() *Benchmark {
	const src = "hf://cais/mmlu?config=all&split=test"
	return multichoice(&Benchmark{
		Name:     "mmlu",
		Category: "Knowledge",
		Source:   src,
		Size:     14042,
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("mmlu: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				it, err := mmluItem(r, i)
				if err != nil {
					return nil, fmt.Errorf("mmlu: %w", err)
				}
				items = append(items, r.located(it))
			}
			return finish(items, dss...), nil
		},
	}, "ABCD", MMLUPattern)
}

// mmluItem reads a Hub row (question, subject, choices list, answer int) or
// a local CSV row (question, choice0..3, answer 0-3, the subject taken from
// the file name <subject>_test.csv).
func mmluItem(r row, i int) (Item, error) {
	q, err := need(r, i, "question")
	if err != nil {
		return Item{}, err
	}
	var choices []string
	if v, _, ok := field(r.rec, "choices"); ok {
		if choices, ok = list(v); !ok {
			return Item{}, fmt.Errorf("%s: field \"choices\": want a list, got %T", r.where(i), v)
		}
	} else {
		for k := 0; k < 4; k++ {
			c, err := need(r, i, fmt.Sprintf("choice%d", k), string(rune('A'+k)))
			if err != nil {
				return Item{}, err
			}
			choices = append(choices, c)
		}
	}
	if len(choices) != 4 {
		return Item{}, fmt.Errorf("%s: want 4 choices, got %d", r.where(i), len(choices))
	}
	av, _, ok := field(r.rec, "answer")
	if !ok {
		return Item{}, fmt.Errorf("%s: missing field \"answer\"", r.where(i))
	}
	var letter string
	if s := strings.TrimSpace(text(av)); len(s) == 1 && s >= "A" && s <= "D" {
		letter = s
	} else {
		n, err := intOf(av)
		if err != nil || n < 0 || n > 3 {
			return Item{}, fmt.Errorf("%s: field \"answer\": want 0-3 or A-D, got %v", r.where(i), av)
		}
		letter = "ABCD"[n : n+1]
	}
	subject := ""
	if v, _, ok := field(r.rec, "subject"); ok {
		subject = text(v)
	} else {
		subject = strings.TrimSuffix(strings.TrimSuffix(path.Base(r.part), ".csv"), "_test")
	}
	return userItem(0, subject, choicePrompt(mmluHead, q, choices), letter, map[string]any{"letters": "ABCD"},
		map[string]any{"question": q, "choices": anyList(choices), "answer": letter, "subject": subject}), nil
}

// MMLU-Pro prompt styles (params.prompt_style).
const (
	// mmluProStyleNeMo is NeMo Evaluator's zero-shot prompt (the default).
	mmluProStyleNeMo = "nemo"
	// mmluProStyleOfficial is TIGER-Lab's 5-shot CoT protocol
	// (evaluate_from_local.py): its prompt, its few-shot examples from the
	// validation split, its extraction and its guess when nothing matches.
	mmluProStyleOfficial = "official"

	mmluProFewshotSrc = "hf://TIGER-Lab/MMLU-Pro?split=validation"
	// mmluProOfficialHead is cot_prompt_lib/initial_prompt.txt with {$}
	// replaced by the category, plus the "\n" generate_cot_prompt adds.
	mmluProOfficialHead = "The following are multiple choice questions (with answers) about %s. " +
		"Think step by step and then finish your answer with \"the answer is (X)\" " +
		"where X is the correct letter choice.\n\n"
)

// mmluProRow is one MMLU-Pro record.
type mmluProRow struct {
	question, answer, category, cot string
	options                         []string
}

func mmluProRead(r row, i int) (mmluProRow, error) {
	q, err := need(r, i, "question")
	if err != nil {
		return mmluProRow{}, err
	}
	ov, _, _ := field(r.rec, "options")
	opts, ok := list(ov)
	if !ok || len(opts) == 0 || len(opts) > 10 {
		return mmluProRow{}, fmt.Errorf("%s: field \"options\": want a list of 1-10, got %T", r.where(i), ov)
	}
	// The target is the "answer" letter, as NeMo's target_field. It is
	// not re-derived from answer_index: the two disagree on question 3983
	// (answer C, answer_index 1), and the letter is what the official
	// MMLU-Pro evaluation compares with.
	ans, err := need(r, i, "answer")
	if err != nil {
		return mmluProRow{}, err
	}
	ans = strings.TrimSpace(ans)
	if len(ans) != 1 || ans < "A" || ans > "J" {
		return mmluProRow{}, fmt.Errorf("%s: field \"answer\": want a letter A-J, got %q", r.where(i), ans)
	}
	row := mmluProRow{question: q, answer: ans, options: opts}
	if v, _, ok := field(r.rec, "category"); ok {
		row.category = text(v)
	}
	if v, _, ok := field(r.rec, "cot_content"); ok {
		row.cot = text(v)
	}
	return row, nil
}

// officialOptions drops "N/A" options, as the official preprocess does.
func officialOptions(opts []string) []string {
	var out []string
	for _, o := range opts {
		if o != "N/A" {
			out = append(out, o)
		}
	}
	return out
}

// cotExample is format_cot_example: "Question:\n{q}\nOptions:\nA. {o}\n…"
// then the example's cot_content (its "A: Let's think step by step." made
// "Answer: …") and a blank line, or, for the question asked,
// "Answer: Let's think step by step.".
func cotExample(b *strings.Builder, r mmluProRow, withAnswer bool) {
	b.WriteString("Question:\n")
	b.WriteString(r.question)
	b.WriteString("\nOptions:\n")
	for i, o := range officialOptions(r.options) {
		fmt.Fprintf(b, "%c. %s\n", 'A'+i, o)
	}
	if withAnswer {
		b.WriteString(strings.ReplaceAll(r.cot, "A: Let's think step by step.", "Answer: Let's think step by step."))
		b.WriteString("\n\n")
	} else {
		b.WriteString("Answer: Let's think step by step.")
	}
}

// mmluProStyle reads params.prompt_style and params.num_fewshot.
func mmluProStyle(params map[string]any) (string, int, error) {
	style := mmluProStyleNeMo
	if v, ok := params["prompt_style"]; ok && v != nil {
		s, ok := v.(string)
		if !ok || (s != mmluProStyleNeMo && s != mmluProStyleOfficial) {
			return "", 0, fmt.Errorf("params.prompt_style: want %q or %q, got %v", mmluProStyleNeMo, mmluProStyleOfficial, v)
		}
		style = s
	}
	k := 5
	if v, ok := params["num_fewshot"]; ok && v != nil {
		n, err := intOf(v)
		if err != nil || n < 0 {
			return "", 0, fmt.Errorf("params.num_fewshot: want an integer >= 0, got %v", v)
		}
		k = n
	}
	return style, k, nil
}

func mmluPro() *Benchmark {
	const src = "hf://TIGER-Lab/MMLU-Pro?split=test"
	return multichoice(&Benchmark{
		Name:      "mmlu_pro",
		Category:  "Knowledge",
		Source:    src,
		Size:      12032,
		ExtraData: []string{"fewshot_path"},
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			style, k, err := mmluProStyle(params)
			if err != nil {
				return nil, fmt.Errorf("mmlu_pro: %w", err)
			}
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("mmlu_pro: %w", err)
			}
			// The official few-shot pool: the first k validation rows of
			// the item's category, in file order.
			shots := map[string][]mmluProRow{}
			all := dss
			if style == mmluProStyleOfficial && k > 0 {
				spec := mmluProFewshotSrc
				if v, ok := params["fewshot_path"].(string); ok && v != "" {
					spec = v
				}
				ds, err := l.Load(ctx, spec, dataset.LoadOptions{})
				if err != nil {
					return nil, fmt.Errorf("mmlu_pro: few-shot pool %s: %w", spec, err)
				}
				for i, r := range rowsOf(ds) {
					sr, err := mmluProRead(r, i)
					if err != nil {
						return nil, fmt.Errorf("mmlu_pro: few-shot pool: %w", err)
					}
					if len(shots[sr.category]) < k {
						shots[sr.category] = append(shots[sr.category], sr)
					}
				}
				all = append(slices.Clip(dss), ds)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				mr, err := mmluProRead(r, i)
				if err != nil {
					return nil, fmt.Errorf("mmlu_pro: %w", err)
				}
				content := map[string]any{"question": mr.question, "options": anyList(mr.options), "answer": mr.answer, "category": mr.category}
				if style == mmluProStyleOfficial {
					var b strings.Builder
					fmt.Fprintf(&b, mmluProOfficialHead, mr.category)
					for _, s := range shots[mr.category] {
						cotExample(&b, s, true)
					}
					cotExample(&b, mr, false)
					n := len(officialOptions(mr.options))
					items = append(items, r.located(userItem(0, mr.category, b.String(), mr.answer,
						map[string]any{"letters": score.DefaultLetters[:n], "prompt_style": style}, content)))
					continue
				}
				padded := append(append([]string(nil), mr.options...), make([]string, 10-len(mr.options))...)
				items = append(items, r.located(userItem(0, mr.category, choicePrompt(mmluProHead, mr.question, padded), mr.answer,
					map[string]any{"letters": score.DefaultLetters[:len(mr.options)]}, content)))
			}
			return finish(items, all...), nil
		},
	}, "ABCDEFGHIJ", MMLUProPattern)
}

// mmluProOfficialScore scores with the official extraction. Where none of
// its three steps matches, the official scripts guess: compute_accuracy.py
// re-seeds random.seed(12345) before every guess, so its "random" option is
// always G (the published Llama-3.1-8B-Instruct outputs store pred "G" for
// all 694 such items) — right only on G items, never on items with fewer
// than seven options. We guess instead with a generator seeded by the
// item's content ID: a fair 1/n chance among the item's own options, the
// same guess in every shard and run. The sample records Extracted "" (no
// answer was given), and Details "how": "random" with the guessed "guess".
// This is the only place our number can differ from the official one; the
// regression test in runtime/score reproduces 44.19% when the guess is G.
func mmluProOfficialScore(it *Item, response string) Score {
	letters := itemLetters(it, score.DefaultLetters)
	ex, how := score.ExtractMMLUPro(response)
	robust, _ := score.ExtractChoice(response, letters)
	extra := map[string]float64{"scorer:mcq_robust": b2f(robust != "" && robust == it.Expected)}
	if ex == "" {
		guess := seededLetter(it.ID, letters)
		s := binary("mmlu_pro_official", guess == it.Expected, "", map[string]any{"how": "random", "guess": guess})
		s.Scores = extra
		return s
	}
	s := binary("mmlu_pro_official", ex == it.Expected, ex, map[string]any{"how": how})
	s.Scores = extra
	return s
}

// seededLetter picks one of letters with a generator seeded by key.
func seededLetter(key, letters string) string {
	sum := sha256.Sum256([]byte("mmlu_pro fallback\x00" + key))
	var hi, lo uint64
	for k := range 8 {
		hi, lo = hi<<8|uint64(sum[k]), lo<<8|uint64(sum[8+k])
	}
	r := rand.New(rand.NewPCG(hi, lo))
	i := r.IntN(len(letters))
	return letters[i : i+1]
}

// gpqaSeed is the seed of an item's choice shuffle: the first 63 bits of
// sha256("gpqa choices", choice seed, content ID). NeMo shuffles with one
// Random(42) shared by all rows in dataset order, so an item's order
// depends on the rows before it and changes under sharding, filtering or
// reordering; seeding per item makes it a function of the item alone.
func gpqaSeed(choiceSeed int64, contentID string) int64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "gpqa choices\x00%d\x00%s", choiceSeed, contentID))
	var u uint64
	for _, c := range sum[:8] {
		u = u<<8 | uint64(c)
	}
	return int64(u >> 1)
}

func gpqa() *Benchmark {
	const src = "hf://Idavidrein/gpqa?config=gpqa_diamond&split=train"
	return multichoice(&Benchmark{
		Name:     "gpqa",
		Category: "Science",
		Source:   src,
		Size:     198, // the diamond subset
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			// params.choice_seed (default 42, NeMo's) varies every item's
			// option order at once.
			choiceSeed := int64(42)
			if v, ok := params["choice_seed"]; ok && v != nil {
				n, err := intOf(v)
				if err != nil {
					return nil, fmt.Errorf("gpqa: params.choice_seed: %w", err)
				}
				choiceSeed = int64(n)
			}
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("gpqa: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				var f [6]string
				for k, name := range []string{"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"} {
					if f[k], err = need(r, i, name); err != nil {
						return nil, fmt.Errorf("gpqa: %w", err)
					}
				}
				if v, _, ok := field(r.rec, "High-level domain"); ok {
					f[5] = text(v)
				}
				choices := []string{f[1], f[2], f[3], f[4]}
				content := map[string]any{"question": f[0], "correct_answer": f[1],
					"incorrect_answers": anyList(choices[1:]), "domain": f[5]}
				// Repeated content gets the same order: it is the same item.
				perm := pyrand.Perm(4, gpqaSeed(choiceSeed, ContentID(content)))
				shuffled := make([]string, 4)
				for k, p := range perm {
					shuffled[k] = choices[p]
				}
				// shuffled.index(correct): the first equal text.
				letter := ""
				for k, s := range shuffled {
					if s == f[1] {
						letter = "ABCD"[k : k+1]
						break
					}
				}
				items = append(items, r.located(userItem(0, f[5], choicePrompt(gpqaHead, f[0], shuffled), letter,
					map[string]any{"choices": anyList(shuffled), "letters": "ABCD"}, content)))
			}
			return finish(items, dss...), nil
		},
	}, "ABCD", MMLUPattern)
}
