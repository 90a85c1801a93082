package provenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ProbeTimeout bounds a whole Probe (both requests): provenance must not
// hold up a shard whose server is slow to answer metadata requests.
const ProbeTimeout = 5 * time.Second

// maxProbeBody bounds what Probe reads of a response: hosted APIs list
// hundreds of models, a few MB at most.
const maxProbeBody = 8 << 20

// Probe asks the server at base (an OpenAI base URL, ending in /v1) what it
// is, and fills s.Models, s.ServerVersion, s.Headers and s.ProbeError:
//
//   - GET <base>/models: the models served (with vLLM's root and
//     max_model_len), and the identifying headers of the response;
//   - GET <base without /v1>/version: vLLM's and SGLang's {"version": …}.
//     A 404 (hosted APIs) is no error; the server version is then taken
//     from a response header with "version" in its name, if any.
//
// apiKey, when set, is sent as a bearer token, as the model client sends it;
// it never appears in s. Probe returns within ProbeTimeout and never fails:
// what went wrong is in s.ProbeError. It does not set s.Fingerprint.
func Probe(ctx context.Context, hc *http.Client, base, apiKey string, s *Serving) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if hc == nil {
		hc = http.DefaultClient
	}
	base = strings.TrimRight(base, "/")
	var errs []string

	body, hdr, status, err := get(ctx, hc, base+"/models", apiKey)
	switch {
	case err != nil:
		errs = append(errs, err.Error())
	case status != http.StatusOK:
		errs = append(errs, fmt.Sprintf("GET %s/models: HTTP %d", redactURL(base), status))
	default:
		s.Headers = identifyingHeaders(hdr)
		models, err := parseModels(body)
		if err != nil {
			errs = append(errs, fmt.Sprintf("GET %s/models: %v", redactURL(base), err))
		}
		s.Models = pickModels(models, s.Model)
	}

	if ctx.Err() == nil {
		root := strings.TrimSuffix(base, "/v1")
		body, _, status, err := get(ctx, hc, root+"/version", apiKey)
		switch {
		case err != nil:
			errs = append(errs, err.Error())
		case status == http.StatusOK:
			var v struct {
				Version string `json:"version"`
			}
			if json.Unmarshal(body, &v) == nil {
				s.ServerVersion = v.Version
			}
		}
	}
	if s.ServerVersion == "" {
		s.ServerVersion = headerVersion(s.Headers)
	}
	s.ProbeError = strings.Join(errs, "; ")
}

// get fetches u. Its errors name the URL without credentials.
func get(ctx context.Context, hc *http.Client, u, apiKey string) (body []byte, h http.Header, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("GET %s: bad URL", redactURL(u))
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		// url.Error holds the URL as given; say what failed without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, 0, fmt.Errorf("GET %s: no answer within %v", redactURL(u), ProbeTimeout)
		}
		return nil, nil, 0, fmt.Errorf("GET %s: %v", redactURL(u), err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("GET %s: reading the body: %v", redactURL(u), err)
	}
	return body, resp.Header, resp.StatusCode, nil
}

// redactURL drops user info and the query, which may carry credentials.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

func parseModels(body []byte) ([]ServedModel, error) {
	var list struct {
		Data []ServedModel `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("not a model list: %v", err)
	}
	return list.Data, nil
}

// pickModels keeps the entry of the model nel asks for when the server
// lists it: a hosted API lists hundreds of models and adds new ones every
// week, which says nothing about the one that answered and would change
// the fingerprint. Otherwise (the server answers to another name, or
// serves only a few) every entry is kept, sorted by id, at most
// maxListedModels.
func pickModels(models []ServedModel, want string) []ServedModel {
	for _, m := range models {
		if m.ID == want {
			return []ServedModel{m}
		}
	}
	slices.SortFunc(models, func(a, b ServedModel) int { return strings.Compare(a.ID, b.ID) })
	if len(models) > maxListedModels {
		models = models[:maxListedModels]
	}
	return models
}

const maxListedModels = 16

// identifyingHeaders keeps the response headers that say what the server
// is: Server, and those whose name contains "version", "model" or
// "fingerprint". Names that could carry a credential or a session are
// never kept, whatever they contain.
func identifyingHeaders(h http.Header) map[string]string {
	var out map[string]string
	for name, vals := range h {
		n := strings.ToLower(name)
		if !identifying(n) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[n] = strings.Join(vals, ", ")
	}
	return out
}

func identifying(n string) bool {
	for _, bad := range []string{"cookie", "auth", "key", "token", "secret", "session", "password"} {
		if strings.Contains(n, bad) {
			return false
		}
	}
	if n == "server" {
		return true
	}
	for _, good := range []string{"version", "model", "fingerprint"} {
		if strings.Contains(n, good) {
			return true
		}
	}
	return false
}

// headerVersion is the value of the first (by name) header with "version"
// in its name, "" when there is none.
func headerVersion(h map[string]string) string {
	var names []string
	for n := range h {
		if strings.Contains(n, "version") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return h[names[0]]
}
