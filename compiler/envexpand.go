package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
)

// ${VAR} expansion at load time, as NeMo Evaluator expands its configs
// (nemo-evaluator-facts §2.1): ${VAR} and ${VAR:-default} in every string
// take the submitting environment's value; an unset variable without a
// default is an error; $${VAR} is the literal text ${VAR}, which a url
// resolves on the node (and which compile refuses elsewhere, support.go:
// nel would keep it as text where NeMo Evaluator's shell expanded it).
//
// A variable whose name says it holds a secret (secretRef: …_API_KEY,
// …_TOKEN, …) is never expanded: in a url it stays a reference nel-run
// resolves on the node, anywhere else it is an error. And two kinds of
// field are not expanded at all, because what they hold may be a secret
// and DESIGN §3 keeps secrets out of every file nel writes:
// services.*.api_key and the values of environment maps (extra_env,
// container_env, env_vars) and of proxy extra_headers. Their ${VAR} stays a
// reference, passed by name and resolved on the node, and the hashes see
// only its text. Everything else is methodology or deployment, and the
// hashes see the expanded value: a ${VAR} that picks a dataset or a limit
// changes the recipe hash when the variable does.

// envRE is NeMo Evaluator's reference syntax: ${NAME} or ${NAME:-default}.
var envRE = regexp.MustCompile(`\$\{(\w+)(?::-([^}\n]*))?\}`)

// escapedRef marks $${ while the rest of a string is expanded.
const escapedRef = "\x00nel-escaped-ref\x00"

// referenceMaps are the mappings whose values stay ${VAR} references.
var referenceMaps = []string{"extra_env", "container_env", "env_vars", "extra_headers"}

// keepsReferences reports whether the string at path is one whose ${VAR}
// is resolved on the node, not at load time.
func keepsReferences(path []any) bool {
	n := len(path)
	if n == 3 && path[0] == "services" && path[2] == "api_key" {
		return true
	}
	for _, p := range path[:max(n-1, 0)] {
		if s, ok := p.(string); ok && slices.Contains(referenceMaps, s) {
			return true
		}
	}
	return false
}

// secretSuffixes end the names of variables that hold secrets, by the
// conventions of the tools nel's users come from (NVIDIA_API_KEY,
// HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, …).
var secretSuffixes = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "ACCESS_KEY", "PRIVATE_KEY"}

// secretRef returns the first variable s references (not escaped as
// $${…}) whose name says it holds a secret.
func secretRef(s string) (string, bool) {
	protected := strings.ReplaceAll(s, "$${", escapedRef)
	for _, m := range envRE.FindAllStringSubmatch(protected, -1) {
		up := strings.ToUpper(m[1])
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(up, suf) {
				return m[1], true
			}
		}
	}
	return "", false
}

// expansion is the result of expanding a recipe's strings.
type expansion struct {
	// deferred are the paths of expanded strings that hold a literal
	// ${VAR} written as $${VAR}: only some fields resolve it on the node
	// (support.go refuses the others).
	deferred [][]any
}

// expandEnv expands the ${VAR} references in the strings of x (see the
// top of this file). getenv reads the submitting environment; file and
// overrides name where a string without a position came from.
func expandEnv(x ast.Expr, file string, overrides []Override, getenv func(string) (string, bool)) (ast.Expr, *expansion, error) {
	exp := &expansion{}
	out, err := walkStrings(x, nil, func(p []any, lit *ast.BasicLit) (ast.Expr, error) {
		s, _ := stringOf(lit)
		if !strings.Contains(s, "${") {
			return lit, nil
		}
		if keepsReferences(p) {
			return stringAt(strings.ReplaceAll(s, "$${", "${"), lit.Pos()), nil
		}
		if name, ok := secretRef(s); ok {
			// A url keeps it for nel-run to resolve on the node, like a
			// $${VAR}; anywhere else its value would be written down.
			if len(p) == 3 && p[0] == "services" && p[2] == "url" {
				exp.deferred = append(exp.deferred, p)
				return stringAt(strings.ReplaceAll(s, "$${", "${"), lit.Pos()), nil
			}
			return nil, errAt(lit.Pos(), file, p, "${%s} names a secret, and nel never writes a secret into a compiled job, plan or bundle: pass it by name (a service's api_key, or an extra_env, container_env or env_vars value)", name)
		}
		t, whole, err := expandString(s, getenv)
		if err != nil {
			where := file
			if o, ok := overrideFor(overrides, selectors(p)); ok {
				where = "-O " + o.Text
			}
			return nil, errAt(lit.Pos(), where, p, "%v", err)
		}
		if strings.Contains(s, "$${") {
			exp.deferred = append(exp.deferred, p)
		}
		if whole {
			return textOrTyped(t, lit.Pos()), nil
		}
		return stringAt(t, lit.Pos()), nil
	})
	return out, exp, err
}

// expandString expands s; whole reports whether s was one reference, so
// that its value may be read as a number (textOrTyped).
func expandString(s string, getenv func(string) (string, bool)) (out string, whole bool, err error) {
	protected := strings.ReplaceAll(s, "$${", escapedRef)
	if m := envRE.FindStringSubmatchIndex(protected); m != nil && m[0] == 0 && m[1] == len(protected) {
		whole = true
	}
	out = envRE.ReplaceAllStringFunc(protected, func(ref string) string {
		m := envRE.FindStringSubmatch(ref)
		if v, ok := getenv(m[1]); ok {
			return v
		}
		if strings.Contains(ref, ":-") {
			return m[2]
		}
		if err == nil {
			err = fmt.Errorf("environment variable %s is not set and ${%s} has no default (set it, or write ${%s:-default})", m[1], m[1], m[1])
		}
		return ref
	})
	return strings.ReplaceAll(out, escapedRef, "${"), whole, err
}
