package compiler

import (
	"testing"

	"github.com/nel-eval/nel/internal/shelltest"
)

// TestShellWord runs each rendering through the shells with SHARED_ROOT
// set and checks the one word it gives (and that it runs nothing).
func TestShellWord(t *testing.T) {
	tests := []struct{ in, want, word string }{
		{"nvidia/Llama-3.1-8B", "nvidia/Llama-3.1-8B", "nvidia/Llama-3.1-8B"},
		{"${SHARED_ROOT}/GLM 5", `"${SHARED_ROOT}"'/GLM 5'`, "/lustre/my models/GLM 5"},
		{"a${SHARED_ROOT}b${SHARED_ROOT}", `a"${SHARED_ROOT}"b"${SHARED_ROOT}"`, "a/lustre/my modelsb/lustre/my models"},
		{"$(touch x)${SHARED_ROOT}", `'$(touch x)'"${SHARED_ROOT}"`, "$(touch x)/lustre/my models"},
		// A default is refused by unsupported(); here it stays text.
		{"${X:-d}", `'${X:-d}'`, "${X:-d}"},
	}
	for _, tt := range tests {
		got := shellWord(tt.in)
		if got != tt.want {
			t.Errorf("shellWord(%q) = %s, want %s", tt.in, got, tt.want)
		}
		for _, sh := range shelltest.Shells(t) {
			out := shelltest.Run(t, sh, "C", `SHARED_ROOT='/lustre/my models'; set -- `+got+`; printf '%s|%s' "$#" "$1"`)
			if want := "1|" + tt.word; string(out) != want {
				t.Errorf("%s sees %q for %s, want %q", sh.Name, out, got, want)
			}
		}
	}
}
