package intercept

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// payloadModifierConfig is NeMo's payload_modifier: body keys removed and
// renamed at any depth, keys added at the top level (overwriting), headers
// removed, renamed and added.
type payloadModifierConfig struct {
	ParamsToRemove  []string          `json:"params_to_remove"`
	ParamsToAdd     map[string]any    `json:"params_to_add"`
	ParamsToRename  map[string]string `json:"params_to_rename"`
	HeadersToAdd    map[string]string `json:"headers_to_add"`
	HeadersToRemove []string          `json:"headers_to_remove"`
	HeadersToRename map[string]string `json:"headers_to_rename"`
}

// hopByHop are the headers the HTTP layer owns: setting them breaks framing
// or routing, so a config that names one is refused (NeMo drops them with a
// warning; nel says so before the run instead).
func hopByHop(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-length", "connection", "transfer-encoding":
		return true
	}
	return false
}

func newPayloadModifier(raw []byte) (Interceptor, error) {
	var c payloadModifierConfig
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	for name := range c.HeadersToAdd {
		if hopByHop(name) {
			return nil, fmt.Errorf("config.headers_to_add.%s: a hop-by-hop header cannot be set", name)
		}
	}
	for from, to := range c.HeadersToRename {
		if hopByHop(to) {
			return nil, fmt.Errorf("config.headers_to_rename.%s: cannot rename to the hop-by-hop header %s", from, to)
		}
	}
	remove := map[string]bool{}
	for _, k := range c.ParamsToRemove {
		remove[k] = true
	}
	return requestEdit(func(req *Request) error {
		body := any(req.Body)
		if len(remove) > 0 {
			body = removeKeys(body, remove)
		}
		if len(c.ParamsToRename) > 0 {
			body = renameKeys(body, c.ParamsToRename)
		}
		req.Body = body.(map[string]any)
		for k, v := range c.ParamsToAdd {
			req.Body[k] = v
		}
		editHeaders(req.Header, c)
		return nil
	}), nil
}

func editHeaders(h http.Header, c payloadModifierConfig) {
	for _, name := range c.HeadersToRemove {
		h.Del(name)
	}
	// Sorted, so two renames onto one name end the same way every run.
	from := make([]string, 0, len(c.HeadersToRename))
	for k := range c.HeadersToRename {
		from = append(from, k)
	}
	sort.Strings(from)
	for _, k := range from {
		if v, ok := h[http.CanonicalHeaderKey(k)]; ok {
			h.Del(k)
			h[http.CanonicalHeaderKey(c.HeadersToRename[k])] = v
		}
	}
	for k, v := range c.HeadersToAdd {
		h.Set(k, v)
	}
}

// removeKeys drops the keys from every object in v, at any depth.
func removeKeys(v any, keys map[string]bool) any {
	return rekey(v, func(k string) (string, bool) { return k, !keys[k] })
}

// renameKeys renames keys in every object in v, at any depth.
func renameKeys(v any, names map[string]string) any {
	return rekey(v, func(k string) (string, bool) {
		if n, ok := names[k]; ok {
			return n, true
		}
		return k, true
	})
}

// rekey copies v with each object key k replaced by f(k), or left out
// when f says not to keep it.
func rekey(v any, f func(string) (string, bool)) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if nk, keep := f(k); keep {
				out[nk] = rekey(x, f)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = rekey(x, f)
		}
		return out
	}
	return v
}

// modifyTools is NeMo's modify_tools: properties stripped from (and from
// the required list of) every tool's parameter schema, and properties
// added where a tool lacks them.
func newModifyTools(raw []byte) (Interceptor, error) {
	var c struct {
		StripProperties []string                  `json:"strip_properties"`
		AddProperties   map[string]map[string]any `json:"add_properties"`
	}
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	return requestEdit(func(req *Request) error {
		tools, _ := req.Body["tools"].([]any)
		for _, t := range tools {
			props, params := toolProperties(t)
			if props == nil {
				continue
			}
			for _, f := range c.StripProperties {
				delete(props, f)
				if list, ok := params["required"].([]any); ok {
					params["required"] = without(list, f)
				}
			}
			for f, schema := range c.AddProperties {
				if _, ok := props[f]; !ok {
					props[f] = deepCopy(schema)
				}
			}
		}
		return nil
	}), nil
}

// toolProperties returns a tool's parameters.properties and parameters
// (the function's, or the tool's own in the flat form).
func toolProperties(t any) (props, params map[string]any) {
	tool, _ := t.(map[string]any)
	fn, _ := tool["function"].(map[string]any)
	if fn == nil {
		fn = tool
	}
	params, _ = fn["parameters"].(map[string]any)
	props, _ = params["properties"].(map[string]any)
	return props, params
}

func without(list []any, s string) []any {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func deepCopy(v any) any {
	return rekey(v, func(k string) (string, bool) { return k, true })
}
