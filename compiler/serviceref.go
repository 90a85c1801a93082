package compiler

import (
	"encoding/json"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// A container:// benchmark's params may name the address of a server the
// job starts as $${NEL_SERVICE_<NAME>_HOST}: a judge the job serves beside
// the model, say (a launcher config's auxiliary deployment,
// launcher_aux.go). The address is known only on the node, so the text
// stays a reference in the recipe, plan and hashes, and the harness step
// fills it in from the job's environment when it writes the image's
// run_config (harnessScript). The server's key goes by name the same way
// (NEL_SERVICE_<NAME>_API_KEY, as an api_key that names a variable).

// paramsServiceRef reports whether p, a deferred $${VAR} string, is in a
// container benchmark's params and names only managed servers' addresses.
func paramsServiceRef(r *Recipe, p []any) bool {
	if len(p) < 3 || p[0] != "benchmarks" || p[2] != "params" {
		return false
	}
	i, ok := p[1].(int)
	if !ok || i < 0 || i >= len(r.Benchmarks) {
		return false
	}
	if kind, _, _, ok := harnessOf(r.Benchmarks[i]); !ok || kind != "container" || r.Cluster.Type != "slurm" {
		return false
	}
	s, ok := valueIn(r.Benchmarks[i].Params, p[3:]).(string)
	if !ok {
		return false
	}
	hosts := map[string]bool{}
	for name, sv := range r.Services {
		if sv.Managed() {
			hosts[serverHostEnv(name)] = true
		}
	}
	refs := envRE.FindAllStringSubmatch(s, -1)
	for _, m := range refs {
		if !hosts[m[1]] || m[2] != "" {
			return false
		}
	}
	return len(refs) > 0
}

// valueIn is the value at path (keys and indices) inside x, nil if none.
func valueIn(x any, path []any) any {
	for _, k := range path {
		switch n := x.(type) {
		case map[string]any:
			key, _ := k.(string)
			x = n[key]
		case []any:
			i, ok := k.(int)
			if !ok || i < 0 || i >= len(n) {
				return nil
			}
			x = n[i]
		default:
			return nil
		}
	}
	return x
}

// serviceRefSteps are the harness step's statements, on the batch host
// once the run_config is written, that put in the addresses benchmark rb's
// params name (an IPv4 address, which JSON text takes as it is), and the
// names of the keys' variables the image is to get.
func serviceRefSteps(r *Recipe, rb *Benchmark) (stmts, names []string) {
	if kind, _, _, ok := harnessOf(rb); !ok || kind != "container" || len(rb.Params) == 0 {
		return nil, nil
	}
	text, err := json.Marshal(rb.Params)
	if err != nil {
		return nil, nil
	}
	for _, name := range sortedKeys(r.Services) {
		host := serverHostEnv(name)
		if sv := r.Services[name]; !sv.Managed() || !strings.Contains(string(text), "${"+host+"}") {
			continue
		}
		file := `"$nel_hdir/` + harnessConfigFile + `"`
		stmts = append(stmts, `if ! nel_cfg=$(cat `+file+`) || ! printf '%s\n' "${nel_cfg//"\${`+host+`}"/"$`+host+`"}" > `+file+`; then nel_fail `+
			shellquote.Quote("cannot put service "+name+"'s address in "+harnessConfigFile)+`; fi`)
		if access(r.Services[name].Type).keyed {
			names = append(names, serverKeyEnv(name))
		}
	}
	return stmts, names
}
