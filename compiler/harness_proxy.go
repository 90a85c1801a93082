package compiler

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/nel-eval/nel/templates"
)

// A harness calls the model itself, past nel's client, so a service's
// proxy.interceptors reach it only through nel-run proxy (under nel run,
// the same proxy in nel's process: HarnessProxy): the step runs
// nel-run (mounted into the harness's image: a static binary runs in any)
// as `nel-run proxy --config … -- bash -c …`, the harness its agent. The
// proxy runs in the harness's own step, so on its node, and lives exactly
// as long as the harness; the harness gets the proxy's URL and a token in
// NEL_HARNESS_URL and NEL_HARNESS_API_KEY, and the upstream's key stays
// with the proxy, read by name on the node.
const (
	harnessProxyBin  = "/nel-run/nel-run"
	harnessProxyFile = "nel-proxy.json"
)

// harnessProxy is what a harness step needs to run behind its service's
// chain (or its proxy.request_timeout, which bounds the harness's calls
// there): the proxy's config (JSON), and the folders its links write (the
// cache, the pairs dump), each mounted at its own path. ok is false when
// the service has no chain.
type harnessProxy struct {
	Config string
	Dirs   []string
	cfg    intercept.ProxyConfig
}

// HarnessProxy is the proxy nel run puts benchmark i of plan p behind, as
// a SLURM job does (nel run serves it in its own process): ok is false
// when its service has no chain or request_timeout. dirs are the folders
// its links write.
func HarnessProxy(s *Source, p *plan.Plan, i int) (cfg intercept.ProxyConfig, dirs []string, ok bool) {
	hp, ok := harnessProxyOf(s.Recipe, p, p.Benchmarks[i])
	return hp.cfg, hp.Dirs, ok
}

func harnessProxyOf(r *Recipe, p *plan.Plan, b plan.Benchmark) (hp harnessProxy, ok bool) {
	var sv plan.Service
	for _, x := range p.Services {
		if x.Name == b.Solver.Service {
			sv = x
		}
	}
	timeout, timed := proxyRequestTimeout(r.Services[b.Solver.Service])
	if len(sv.Interceptors) == 0 && !timed {
		return hp, false
	}
	// Harbor runs its agents in task containers of their own, which do
	// not share the node's loopback: they reach the proxy by the node's
	// name (the token keeps others on the network from spending the key).
	listen := "127.0.0.1:0"
	if b.Harness.Kind == harborKind {
		listen = "0.0.0.0:0"
	}
	cfg := intercept.ProxyConfig{Listen: listen, UpstreamEnv: "NEL_HARNESS_URL", Model: sv.Model, Interceptors: sv.Interceptors,
		Scope: safeDir(b.Key), RequestTimeout: timeout}
	if sv.APIKey != nil {
		cfg.APIKeyEnv = "NEL_HARNESS_API_KEY"
	}
	out, _ := json.MarshalIndent(cfg, "", "  ") // plain data: it always encodes
	hp.Config, hp.cfg = string(out), cfg
	for _, ic := range sv.Interceptors {
		switch d, _ := ic.Config[pathKeys[ic.Name]].(string); {
		case d == "":
		case ic.Name == "caching":
			hp.Dirs = append(hp.Dirs, d)
		default:
			hp.Dirs = append(hp.Dirs, filepath.Dir(d))
		}
	}
	return hp, true
}

// wrapProxy puts the step's command behind the proxy: the config written
// beside the harness's files, the folders its links write made and
// mounted, nel-run mounted.
func (st *harnessStep) wrapProxy(hp harnessProxy) {
	st.Proxy, st.ProxyDelim = hp.Config, templates.HeredocDelimiter(hp.Config, "NEL_PROXY_CONFIG_EOF")
	st.ProxyFile = harnessProxyFile
	for _, d := range hp.Dirs {
		st.Env = append(st.Env, "mkdir -p "+shellquote.Quote(d)+" || nel_fail "+shellquote.Quote("cannot create "+d))
	}
	st.Cmd = harnessProxyBin + " proxy --config " + harnessInside + "/" + harnessProxyFile +
		" --url-env NEL_HARNESS_URL --key-env NEL_HARNESS_API_KEY -- " + st.Cmd
}

// proxyBinMount mounts nel-run in the harness's image; harnessPyxis puts it
// inside the double quotes of the harness's own mount.
const proxyBinMount = ",$NEL_RUN:" + harnessProxyBin + ":ro"

// pathKeys are the interceptor config keys that name a place to write.
var pathKeys = map[string]string{"caching": "cache_dir", "http_pairs_dump": "dump_path"}

// harnessProxyPaths refuses a relative place to write in the chain of a
// service a harness calls: its proxy runs in the harness's image, where
// the folder is mounted at its own path, which must not depend on where
// the job was started.
func harnessProxyPaths(no func(string, ...any), name string, sv *Service) {
	for j, ic := range interceptorsOf(sv) {
		key := pathKeys[ic.Name]
		if d, ok := ic.Config[key].(string); ok && key != "" && !filepath.IsAbs(d) {
			no(fmt.Sprintf("a relative %s for a harness's proxy (it runs in the harness's image, where the folder is mounted at its own path: give an absolute one)", key),
				"services", name, "proxy", "interceptors", j, "config", key)
		}
	}
}
