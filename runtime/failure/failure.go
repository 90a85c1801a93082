// Package failure names why a sample did not produce a clean, scored answer.
// Every result row carries one of these in its error_category column (empty
// when the sample ran cleanly, whatever its reward), and the outcome that
// category implies in its outcome column.
package failure

// Category is a failure category. The zero value means "no failure".
type Category string

// The taxonomy. Model-call failures come from the model client; the others
// are decided after the response is in.
const (
	None          Category = ""
	RateLimit     Category = "rate_limit"     // 429s outlived the sample's budget
	ServerError   Category = "server_error"   // 5xx, connection reset/refused
	Timeout       Category = "timeout"        // the sample's time budget ran out
	ContextLength Category = "context_length" // the prompt does not fit the model's context
	EmptyResponse Category = "empty_response" // no choices, or an empty message
	Truncated     Category = "truncated"      // finish_reason "length": the answer was cut off
	FormatError   Category = "format_error"   // an answer came back, but nothing could be extracted
	Refusal       Category = "refusal"        // the model declined to answer
	APIError      Category = "api_error"      // other 4xx, malformed JSON, anything else from the API
	SandboxError  Category = "sandbox_error"  // the sandbox could not run the program (engine missing, image not pullable)
	JudgeError    Category = "judge_error"    // the judge failed: timed out, errored, or answered nothing parseable
	ScorerError   Category = "scorer_error"   // a recipe's scorer command crashed, timed out or answered outside its protocol
	Interrupted   Category = "interrupted"    // never in a final row: infrastructure stopped the sample
	// An agent (tool_calling) that never answered: still calling tools at
	// max_turns, or making the same call again and again.
	TurnBudget   Category = "turn_budget"
	RepeatedCall Category = "repeated_call"
)

// All lists every category a result row can carry, in a stable order.
var All = []Category{RateLimit, ServerError, Timeout, ContextLength, EmptyResponse, Truncated, FormatError, Refusal, APIError, SandboxError, JudgeError, ScorerError, TurnBudget, RepeatedCall}

// Outcome is how a sample ended, the column every analysis filters on
// (DESIGN §6.7). Exactly one per sample.
type Outcome string

const (
	// Scored: the scorer gave the reward.
	Scored Outcome = "scored"
	// ModelError: the model answered, and the answer is unusable (empty,
	// cut off, refused, nothing extractable, a prompt its context cannot
	// hold, an agent that never stopped calling tools). Scored as wrong, as NeMo Evaluator and the other peers do.
	ModelError Outcome = "model_error"
	// InfraError: the endpoint, the network, the sandbox, the judge, the
	// time budget or nel itself failed. Never scored: headlines and
	// intervals leave these samples out, and a benchmark with too many of
	// them is INVALID.
	InfraError Outcome = "infra_error"
)

// Outcome is the outcome a row with this category has.
func (c Category) Outcome() Outcome {
	switch c {
	case None:
		return Scored
	case ContextLength, EmptyResponse, Truncated, FormatError, Refusal, TurnBudget, RepeatedCall:
		return ModelError
	default:
		// rate_limit, server_error, timeout, api_error, sandbox_error,
		// judge_error, scorer_error, interrupted, and any category a newer nel wrote:
		// an unknown failure is not the model's.
		return InfraError
	}
}

// Error is an error with a failure category.
type Error struct {
	Category Category
	// Status is the last HTTP status seen, 0 when there was none.
	Status int
	// Attempts is how many requests were made.
	Attempts int
	Err      error
}

func (e *Error) Error() string { return string(e.Category) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
