package failure

import "testing"

// Every category has the outcome DESIGN §6.7 gives it: what the model
// said unusably is scored as wrong; what the infrastructure failed at is
// never scored.
func TestOutcome(t *testing.T) {
	want := map[Category]Outcome{
		None:               Scored,
		RateLimit:          InfraError,
		ServerError:        InfraError,
		Timeout:            InfraError,
		ContextLength:      ModelError,
		EmptyResponse:      ModelError,
		Truncated:          ModelError,
		FormatError:        ModelError,
		Refusal:            ModelError,
		APIError:           InfraError,
		SandboxError:       InfraError,
		JudgeError:         InfraError,
		ScorerError:        InfraError,
		Interrupted:        InfraError,
		TurnBudget:         ModelError,
		RepeatedCall:       ModelError,
		"from_a_newer_nel": InfraError,
	}
	for _, c := range All {
		if _, ok := want[c]; !ok {
			t.Errorf("category %q has no outcome in this test", c)
		}
	}
	for c, o := range want {
		if got := c.Outcome(); got != o {
			t.Errorf("%q.Outcome() = %q, want %q", c, got, o)
		}
	}
}
