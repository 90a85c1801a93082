// Package bench defines the built-in benchmarks: where each one's data comes
// from, how an item becomes a prompt, and how a response is scored.
//
// A benchmark turns dataset records into Items. An Item's ID is a hash of
// its canonical content (the dataset's question and gold answer, not the
// prompt template), so the same question gets the same ID whatever file
// format or shard it arrives in; sharding, pairing and resume key on it.
package bench

import (
	"context"
	"math/rand/v2"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Item is one prepared problem.
type Item struct {
	// ID is the content id: ContentID of Content (disambiguated when a
	// dataset holds the same content twice).
	ID string
	// Index is the item's position in the dataset as loaded (all files, in
	// order), kept under shuffling and max_problems.
	Index    int
	Category string
	// Messages is the chat form of the prompt (a system message first when
	// the benchmark has one); Prompt is the plain text used by completions.
	Messages []Message
	Prompt   string
	// Expected is the gold answer as the scorer compares it.
	Expected string
	// Meta holds what the scorer needs beyond Expected (e.g.
	// "correct_answers" []string, "label" string).
	Meta map[string]any
	// Content is what ID hashes: the dataset's own content for this item.
	Content map[string]any
	// Origin says where the item is in its dataset, for messages:
	// "test.jsonl:12" (file and line), or "x.parquet record 12".
	Origin string
}

// Question is the item's own question: its last user message (after any
// few-shot turns), or its plain prompt. A judge and a byob scorer
// command are given it.
func (it *Item) Question() string {
	for i := len(it.Messages) - 1; i >= 0; i-- {
		if it.Messages[i].Role == "user" {
			return it.Messages[i].Content
		}
	}
	return it.Prompt
}

// Score is the verdict on one response.
type Score struct {
	Reward float64
	// Binary says Correct is meaningful (the reward is 0 or 1).
	Binary    bool
	Correct   bool
	Extracted string
	// Method names the scorer, e.g. "answer_line".
	Method  string
	Details map[string]any
	// NeedsJudge says the benchmark cannot score without an LLM judge.
	NeedsJudge bool
	// Scores are extra per-sample metrics, stored in the row's scores map
	// under these names. A pair "NAME/num" and "NAME/den" is a ratio
	// metric: the benchmark's NAME is the sum of num over the sum of den
	// (IFEval's instruction-level accuracy), not a mean of per-row ratios.
	Scores map[string]float64
	// Failure is set when scoring itself failed for infrastructure reasons
	// (the sandbox could not run the program, the judge timed out or
	// answered nonsense): the sample is recorded with this category and
	// reward 0, and the run goes on.
	Failure failure.Category
}

// Env is what a scorer may use beyond the response. Fields are nil when the
// benchmark's recipe configures none.
type Env struct {
	// Sandbox runs generated code (the benchmark's `sandbox`).
	Sandbox sandbox.Sandbox
	// Judges are the benchmark's judge metrics by name; Judge is the first,
	// the one a NeedsJudge benchmark is scored by.
	Judges map[string]Judge
	Judge  Judge
}

// Judge asks an LLM judge. Every call is recorded in the sample's
// trajectory (prompt and raw answer) by the implementation.
type Judge interface {
	// Ask sends msgs to the judge model (with the metric's temperature,
	// max tokens, timeout and retries) and returns its raw answer.
	Ask(ctx context.Context, msgs []Message) (string, error)
}

// Loader loads dataset specs (local paths relative to the recipe, hf:// URIs).
type Loader interface {
	Load(ctx context.Context, spec string, opts dataset.LoadOptions) (*dataset.Dataset, error)
}

// Set is a loaded benchmark: its items and the datasets they came from.
type Set struct {
	Items    []Item
	Datasets []*dataset.Dataset
	// Duplicates are the items whose content repeats an earlier item's:
	// each is evaluated (under its own ID), so the repeated question
	// weighs more in the score than the others.
	Duplicates []Duplicate
}

// Benchmark is one built-in benchmark.
type Benchmark struct {
	Name string
	// Category is the model-card category, e.g. "Mathematics" or "Coding":
	// the column nel report -f model-card shows beside the score.
	Category string
	// Source is the default dataset spec, e.g.
	// "hf://openai/gsm8k?config=main&split=test".
	Source string
	// Scorer names the default scoring method (documentation, row details).
	Scorer string
	// Size is how many items Source holds as published: 0 when nel does
	// not know without downloading it (nel list says so). The tests check
	// each against the real files where ../shared/datasets has them.
	Size int
	// Load reads the data (params["data_path"] replaces Source) and
	// prepares the items, in dataset order, IDs assigned.
	Load func(ctx context.Context, l Loader, params map[string]any) (*Set, error)
	// RowWise says Load loads one dataset spec and makes each item from
	// one record alone, one item a record, in order: called on a window
	// of the dataset (a Dataset with an Offset), it makes that window's
	// items, so a shard can stream the data and keep only its own items.
	// IDs and Index are then the window's; the streaming caller numbers
	// them for the whole dataset.
	RowWise bool
	// Key, when set on a RowWise benchmark, says its items' Content is
	// some of a record's fields as they are: a streaming shard then
	// reads only those of the records it does not keep.
	Key *RowKey
	// ExtraData names the params besides data_path that name a dataset
	// spec the benchmark reads (a few-shot pool's train_path).
	ExtraData []string
	// Score scores a response (reasoning already split off) to it.
	Score func(it *Item, response string) Score
	// ScoreEnv, when set, is used instead of Score by the runtime: a
	// scorer that runs code or asks a judge. Score must still be set for
	// what needs no Env (the runtime's probe of an empty response, gold
	// self-checks); it may return NeedsJudge or a Failure there.
	ScoreEnv func(ctx context.Context, env *Env, it *Item, response string) Score
	// NeedsSandbox says ScoreEnv runs code: the benchmark cannot be scored
	// without a sandbox, and the runtime (and the compiler) refuse it
	// without one.
	NeedsSandbox bool
	// Respond writes a response that Score scores as correct (correct=true)
	// or as wrong; the simulated endpoint and the gold tests use it.
	Respond func(it *Item, correct bool, rng *rand.Rand) string
}
