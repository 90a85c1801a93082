package compiler

import "testing"

// Kubernetes expands $(VAR) and turns $$ into $ in a container's command,
// args and env values: a literal keeps every $ it had.
func TestK8sLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"plain":   "plain",
		"$(X)":    "$$(X)",
		"a$$b":    "a$$$$b",
		"$$(X)":   "$$$$(X)",
		"${HOME}": "$${HOME}",
	} {
		if got := k8sLiteral(in); got != want {
			t.Errorf("k8sLiteral(%q) = %q, want %q", in, got, want)
		}
	}
}
