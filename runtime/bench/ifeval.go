package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/ifeval"
)

// ifeval is Google's IFEval: 541 prompts with verifiable instructions,
// scored by the official checkers (runtime/ifeval). The reward is
// prompt-level strict accuracy; Scores carry prompt-level loose and the
// instruction-level ratios, strict and loose.
func ifevalBench() *Benchmark {
	const src = "hf://google/IFEval?split=train"
	return &Benchmark{
		Name:     "ifeval",
		Category: "Instruction following",
		Source:   src,
		Scorer:   "ifeval",
		Size:     541,
		RowWise:  true,
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("ifeval: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				it, err := ifevalItem(r, i)
				if err != nil {
					return nil, fmt.Errorf("ifeval: %w", err)
				}
				items = append(items, r.located(it))
			}
			return finish(items, dss...), nil
		},
		Score: ifevalScore,
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			ids, kwargs := ifevalMeta(it)
			return ifeval.Respond(ids, kwargs, it.Prompt, correct, rngOr(rng))
		},
	}
}

// ifevalItem reads one record: key, prompt, instruction_id_list and kwargs
// (one object per instruction; the Hugging Face copy lists every kwarg of
// every instruction, unused ones null — nulls are dropped here, as the
// official scorer's callers do, so the JSON and Parquet copies give the
// same content and ID).
func ifevalItem(r row, i int) (Item, error) {
	prompt, err := need(r, i, "prompt")
	if err != nil {
		return Item{}, err
	}
	ids, kwargs, err := ifevalInstructions(r, i, prompt)
	if err != nil {
		return Item{}, err
	}
	var key string
	if k, _, ok := field(r.rec, "key"); ok {
		key = text(k)
	}
	kwAny := make([]any, len(kwargs))
	for j, m := range kwargs {
		kwAny[j] = m
	}
	return userItem(0, "", prompt, strings.Join(ids, ","),
		map[string]any{"instruction_id_list": ids, "kwargs": kwargs, "key": key},
		map[string]any{"key": key, "prompt": prompt, "instruction_id_list": anyList(ids), "kwargs": kwAny}), nil
}

// ifevalInstructions reads a record's instruction_id_list and kwargs, and
// checks them against prompt.
func ifevalInstructions(r row, i int, prompt string) ([]string, []map[string]any, error) {
	v, _, ok := field(r.rec, "instruction_id_list")
	if !ok {
		return nil, nil, fmt.Errorf("%s: missing field \"instruction_id_list\"", r.where(i))
	}
	ids, ok := list(v)
	if !ok {
		return nil, nil, fmt.Errorf("%s: \"instruction_id_list\": want a list, got %T", r.where(i), v)
	}
	kwargs := make([]map[string]any, len(ids))
	if v, _, ok := field(r.rec, "kwargs"); ok {
		raw, ok := v.([]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: \"kwargs\": want a list, got %T", r.where(i), v)
		}
		if len(raw) != len(ids) {
			return nil, nil, fmt.Errorf("%s: %d kwargs for %d instructions", r.where(i), len(raw), len(ids))
		}
		for j, kw := range raw {
			m, ok := kw.(map[string]any)
			if !ok && kw != nil {
				return nil, nil, fmt.Errorf("%s: kwargs[%d]: want an object, got %T", r.where(i), j, kw)
			}
			kwargs[j] = map[string]any{}
			for k, x := range m {
				if x != nil {
					kwargs[j][k] = x
				}
			}
		}
	}
	for j, id := range ids {
		if !ifeval.Supported(id) {
			return nil, nil, fmt.Errorf("%s: unknown instruction id %q", r.where(i), id)
		}
		if _, err := ifeval.Check(id, kwargs[j], prompt, "x"); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.where(i), err)
		}
	}
	return ids, kwargs, nil
}

// ifevalMeta returns an item's instructions.
func ifevalMeta(it *Item) ([]string, []map[string]any) {
	ids, _ := it.Meta["instruction_id_list"].([]string)
	kwargs, _ := it.Meta["kwargs"].([]map[string]any)
	return ids, kwargs
}

// ifevalScore scores prompt-level strict (the reward) and reports the
// loose and instruction-level counts as Scores.
func ifevalScore(it *Item, response string) Score {
	ids, kwargs := ifevalMeta(it)
	v, err := ifeval.Evaluate(ids, kwargs, it.Prompt, response)
	if err != nil {
		// Load validated the kwargs; this is a programming error.
		return binary("ifeval", false, "", map[string]any{"error": err.Error()})
	}
	count := func(bs []bool) float64 {
		n := 0.0
		for _, b := range bs {
			if b {
				n++
			}
		}
		return n
	}
	b01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ns, nl, den := count(v.Strict), count(v.Loose), float64(len(ids))
	s := binary("ifeval", v.StrictAll, fmt.Sprintf("%d/%d strict", int(ns), len(ids)), map[string]any{
		"instruction_id_list": ids,
		"strict":              v.Strict,
		"loose":               v.Loose,
	})
	s.Scores = map[string]float64{
		"ifeval:prompt_strict":          b01(v.StrictAll),
		"ifeval:prompt_loose":           b01(v.LooseAll),
		"ifeval:instruction_strict/num": ns,
		"ifeval:instruction_strict/den": den,
		"ifeval:instruction_loose/num":  nl,
		"ifeval:instruction_loose/den":  den,
	}
	return s
}
