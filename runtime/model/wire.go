package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/nel-eval/nel/runtime/jsonany"
)

// maxBody bounds a response body; a larger one is an API error, not an
// out-of-memory.
const maxBody = 64 << 20

// field is one top-level JSON member that the hook adds to a request body.
type field struct {
	key string
	val json.RawMessage
}

// wire is what one request carries to the hook and brings back from it.
type wire struct {
	overlay []field
	// Set by the hook once a response arrived.
	got    bool
	status int
	header http.Header
	body   []byte
}

type wireKey struct{}

func withWire(ctx context.Context, w *wire) context.Context {
	return context.WithValue(ctx, wireKey{}, w)
}

// hookTransport adds the request's overlay fields to the JSON body go-openai
// built and keeps the response's status, headers and body. It reads the whole
// body itself, so a connection that breaks mid-body is a transport error, and
// a body that arrived whole but does not decode is a malformed response.
type hookTransport struct {
	base http.RoundTripper
}

func (t *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w, _ := r.Context().Value(wireKey{}).(*wire)
	if w == nil {
		return t.base.RoundTrip(r)
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		body, err = mergeFields(body, w.overlay)
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context()) // a RoundTripper must not modify its request
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	w.got, w.status, w.header = true, resp.StatusCode, resp.Header
	if len(b) > maxBody {
		return nil, fmt.Errorf("response body larger than %d bytes", maxBody)
	}
	w.body = b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	return resp, nil
}

// requestKeys are the members of go-openai's body that nel sets. go-openai
// also writes zero values of its own (e.g. "stream": false); those are
// dropped, so that only what the plan sets reaches the server.
var requestKeys = []string{"model", "messages", "prompt", "input", "tools"}

// mergeFields rewrites the JSON object body to hold its requestKeys members
// and fields (which win over a member of the same name, possible only
// through extra_body). Members are written in sorted order, so the same
// request always has the same bytes.
func mergeFields(body []byte, fields []field) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	for k := range m {
		if !slices.Contains(requestKeys, k) {
			delete(m, k)
		}
	}
	for _, f := range fields {
		m[f.key] = f.val
	}
	// What json.Marshal(m) writes, without compacting every value again:
	// the values are json.Marshal's output already (go-openai's body, the
	// overlay), so they are compact and HTML-escaped, as Marshal would
	// leave them. This runs for every request.
	keys := make([]string, 0, len(m))
	n := 2
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	out := make([]byte, 0, n+16)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(out, kb...)
		out = append(out, ':')
		v := m[k]
		if v == nil {
			v = json.RawMessage("null") // as Marshal writes a nil RawMessage
		}
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// overlay renders the request's generation parameters as the fields the
// hook adds: every set field, exactly (float64 values in Go's shortest
// round-trip form, so 0 stays 0 and 0.7 stays 0.7), then extra_body's
// members, which win over a parameter of the same name.
func (c *Client) overlay(req Request) ([]field, error) {
	g := req.Generation
	var fs []field
	add := func(key string, v any) error {
		if b, ok := jsonany.Append(nil, v); ok { // json.Marshal's bytes
			fs = append(fs, field{key, b})
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("generation parameter %s: %w", key, err)
		}
		fs = append(fs, field{key, b})
		return nil
	}
	var errs []error
	maxTokensKey := "max_tokens"
	if c.cfg.Protocol == Responses {
		maxTokensKey = "max_output_tokens"
	}
	if g.Temperature != nil {
		errs = append(errs, add("temperature", *g.Temperature))
	}
	if g.TopP != nil {
		errs = append(errs, add("top_p", *g.TopP))
	}
	if g.TopK != nil {
		errs = append(errs, add("top_k", *g.TopK))
	}
	if g.MaxTokens != nil {
		errs = append(errs, add(maxTokensKey, *g.MaxTokens))
	}
	if c.cfg.Protocol != Responses {
		// What json.Marshal writes for an int64, without its reflection:
		// the seed is the one field that differs between requests.
		fs = append(fs, field{"seed", strconv.AppendInt(nil, req.Seed, 10)})
	}
	if g.Stop != nil {
		errs = append(errs, add("stop", g.Stop))
	}
	if g.FrequencyPenalty != nil {
		errs = append(errs, add("frequency_penalty", *g.FrequencyPenalty))
	}
	if g.PresencePenalty != nil {
		errs = append(errs, add("presence_penalty", *g.PresencePenalty))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(g.ExtraBody))
	for k := range g.ExtraBody {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same request always has the same bytes
	for _, k := range keys {
		b, err := json.Marshal(g.ExtraBody[k])
		if err != nil {
			return nil, fmt.Errorf("extra_body.%s: %w", k, err)
		}
		if i := slices.IndexFunc(fs, func(f field) bool { return f.key == k }); i >= 0 {
			fs[i].val = b
			continue
		}
		fs = append(fs, field{k, b})
	}
	return fs, nil
}
