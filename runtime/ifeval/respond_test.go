package ifeval

import (
	"math/rand/v2"
	"testing"
)

// TestRespondOnInputData requires Respond(follow=true) to strictly follow
// every instruction of at least 95% of the 541 prompts and
// Respond(follow=false) to fail every prompt.
func TestRespondOnInputData(t *testing.T) {
	items := readInputs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	ok, wrong := 0, 0
	for _, it := range items {
		good := Respond(it.ids, it.kwargs, it.prompt, true, rng)
		v, err := Evaluate(it.ids, it.kwargs, it.prompt, good)
		if err != nil {
			t.Fatal(err)
		}
		if v.StrictAll {
			ok++
		} else {
			t.Logf("key %v: Respond(true) misses %v %v", it.key, it.ids, v.Strict)
		}
		bad := Respond(it.ids, it.kwargs, it.prompt, false, rng)
		if v, _ := Evaluate(it.ids, it.kwargs, it.prompt, bad); !v.StrictAll {
			wrong++
		} else {
			t.Errorf("key %v: Respond(false) follows every instruction: %q", it.key, bad)
		}
	}
	t.Logf("Respond(true) strictly correct on %d/%d prompts; Respond(false) wrong on %d/%d", ok, len(items), wrong, len(items))
	if float64(ok) < 0.95*float64(len(items)) {
		t.Errorf("Respond(true) correct on %d/%d < 95%%", ok, len(items))
	}
	if wrong != len(items) {
		t.Errorf("Respond(false) wrong on %d/%d, want all", wrong, len(items))
	}
}
