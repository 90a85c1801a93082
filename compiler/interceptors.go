package compiler

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/plan"
)

// A service's proxy.interceptors (NeMo Evaluator's adapter chain) run in
// nel-run's model client (runtime/intercept). The rest of proxy (NeMo's
// upstream settings for its adapter process) is refused field by field,
// but model_traffic, nel-run's log of the calls.

// interceptorSpec is one proxy.interceptors entry as the recipe wrote it.
type interceptorSpec struct {
	Name   string         `json:"name"`
	Config map[string]any `json:"config"`
}

// interceptorsOf decodes a service's proxy.interceptors (the schema has
// validated them).
func interceptorsOf(sv *Service) []interceptorSpec {
	if sv == nil {
		return nil
	}
	raw, ok := sv.Proxy["interceptors"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	var out []interceptorSpec
	if err != nil || json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// chainOf is the chain service sv's proxy asks for: its
// proxy.interceptors, and what two of NeMo's adapter settings do, as the
// links that do it in nel's chain. proxy.extra_body, which NeMo's
// upstream call merges into every body, is a payload_modifier adding it,
// placed before the first caching link (NeMo's cache key covers
// extra_body too) or last. proxy.verbose, NeMo's proxy logging each
// request (an access log), is a logging link last, which logs each call
// as it goes upstream. interceptorsOf stays the recipe's own list, whose
// indexes the errors name.
func chainOf(sv *Service) []interceptorSpec {
	out := interceptorsOf(sv)
	if sv == nil {
		return out
	}
	if eb, ok := sv.Proxy["extra_body"].(map[string]any); ok && len(eb) > 0 {
		at := len(out)
		for i, ic := range out {
			if ic.Name == "caching" {
				at = i
				break
			}
		}
		link := interceptorSpec{Name: "payload_modifier", Config: map[string]any{"params_to_add": eb}}
		out = slices.Insert(out, at, link)
	}
	if v, _ := sv.Proxy["verbose"].(bool); v {
		out = append(out, interceptorSpec{Name: "logging"})
	}
	return out
}

// proxyRequestTimeout is service sv's proxy.request_timeout in seconds.
func proxyRequestTimeout(sv *Service) (float64, bool) {
	if sv == nil {
		return 0, false
	}
	switch t := sv.Proxy["request_timeout"].(type) {
	case float64:
		return t, true
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	}
	return 0, false
}

// modelTrafficOf is a service's proxy.model_traffic for the plan (nil:
// none).
func modelTrafficOf(sv *Service) *plan.ModelTraffic {
	raw, ok := sv.Proxy["model_traffic"]
	if !ok {
		return nil
	}
	var mt plan.ModelTraffic
	b, err := json.Marshal(raw)
	if err != nil || json.Unmarshal(b, &mt) != nil {
		return nil // the schema decoded it from these very keys
	}
	return &mt
}

// proxyUnsupported refuses what of a service's proxy nel cannot do.
func proxyUnsupported(no func(string, ...any), name string, sv *Service) {
	keys := make([]string, 0, len(sv.Proxy))
	for k := range sv.Proxy {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "interceptors", "model_traffic", "extra_body", "verbose", "request_timeout":
			continue // chainOf, the benchmarks' request_timeout
		}
		no("proxy."+k+" (nel runs proxy.interceptors in its own client; NeMo's adapter-process settings are not implemented)", "services", name, "proxy", k)
	}
	for i, ic := range interceptorsOf(sv) {
		if why, refused := intercept.RefusedReason(ic.Name); refused {
			no(fmt.Sprintf("interceptor %s (%s)", ic.Name, why), "services", name, "proxy", "interceptors", i, "name")
		}
		if _, ok := ic.Config["webhook_url"]; ok && ic.Name == "progress_tracking" {
			no("progress_tracking webhook_url (nel's progress is in the run folder: nel status)", "services", name, "proxy", "interceptors", i, "config", "webhook_url")
		}
	}
}

// planInterceptors is a service's chain for the plan: caching's cache_dir
// and http_pairs_dump's dump_path resolved against the recipe's directory,
// as every recipe path is.
func planInterceptors(s *Source, sv *Service) []plan.Interceptor {
	var out []plan.Interceptor
	for _, ic := range chainOf(sv) {
		cfg := ic.Config
		key := pathKeys[ic.Name]
		if d, ok := cfg[key].(string); ok && key != "" && !filepath.IsAbs(d) {
			cfg = cloneMap(cfg)
			cfg[key] = filepath.Join(s.Dir, d)
		}
		out = append(out, plan.Interceptor{Name: ic.Name, Config: cfg})
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// interceptorMethod is the part of a service's chain that is methodology:
// the links that change what the model is sent or what nel reads back
// (intercept.ChangesRequest), in order, with their configs. Caching,
// logging, statistics and progress only watch or replay and stay out, so
// that turning a cache on does not make a run incomparable with the one
// it replays. nil when no link counts (the hash is then what it was
// before interceptors existed).
func interceptorMethod(sv *Service) []any {
	var out []any
	for _, ic := range chainOf(sv) {
		if intercept.ChangesRequest(ic.Name) {
			out = append(out, map[string]any{"name": ic.Name, "config": ic.Config})
		}
	}
	return out
}
