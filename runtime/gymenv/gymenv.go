// Package gymenv is a remote NeMo Gym resource server as a benchmark
// (gym://HOST:PORT): its items come from /dataset_size and /seed_session,
// its rewards from /verify. nel calls the model itself, so a run against
// it has nel's requests, retries and per-item rows like any benchmark.
//
// The wire format is NeMo Evaluator's GymEnvironment in its evaluator
// protocol: a seeded item's prompt, messages, expected_answer and
// metadata; a verify body {"response": text, "expected": …, "metadata":
// …} sent back with the seeded metadata; {"reward": r, …} in return.
package gymenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
)

// Client talks to one Gym resource server.
type Client struct {
	base string // http://HOST:PORT
	hc   *http.Client
	// Retries is how many times a call that failed for the network's sake
	// (a connection error, a 5xx) is sent again.
	Retries int
}

// Name is a gym:// benchmark name read: the address of a running server
// (gym://HOST:PORT), or the command that starts one (gym://cmd:COMMAND,
// which the compiler turns into a managed gym service).
type Name struct {
	Addr string // HOST:PORT
	Cmd  string // a shell command
}

// ParseName reads a gym:// benchmark name as NeMo Evaluator does: an
// optional query (?protocol=…&data=…) after the first "?", then
// HOST:PORT, cmd:COMMAND, module:MODULE or a benchmark NAME. nel reads
// the forms it can honour and says why of the others.
func ParseName(name string) (Name, error) {
	rest, ok := strings.CutPrefix(name, "gym://")
	if !ok {
		return Name{}, fmt.Errorf("%s: not a gym:// benchmark", name)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if err := checkQuery(query); err != nil {
		return Name{}, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case strings.HasPrefix(rest, "cmd:"):
		if strings.TrimSpace(rest[4:]) == "" {
			return Name{}, fmt.Errorf("%s: gym://cmd: wants a command that starts the server", name)
		}
		return Name{Cmd: rest[4:]}, nil
	case strings.HasPrefix(rest, "module:"):
		return Name{}, fmt.Errorf("%s: gym://module:MODULE is a Python module that NeMo serves with uvicorn in its own Python; nel-run runs no Python: start it yourself with gym://cmd:python -m uvicorn MODULE:app --port $PORT, or give the running server as gym://HOST:PORT", name)
	}
	u, err := url.Parse("http://" + rest)
	if err != nil || u.Host == "" || u.Port() == "" || u.Path != "" && u.Path != "/" {
		return Name{}, fmt.Errorf("%s: want gym://HOST:PORT (a running Gym resource server, e.g. nel serve) or gym://cmd:COMMAND (one nel starts; NeMo's gym://NAME, a built-in benchmark served by nel serve, is that benchmark: name it directly)", name)
	}
	return Name{Addr: u.Host}, nil
}

// checkQuery accepts the query parameters nel honours: protocol=evaluator
// (NeMo's default, the protocol nel serve speaks).
func checkQuery(query string) error {
	if query == "" {
		return nil
	}
	for kv := range strings.SplitSeq(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "protocol" && v == "evaluator":
		case k == "protocol" && v == "native":
			return errors.New("protocol=native is Gym's native protocol (items from a local JSONL, the agent's responses API); nel speaks the evaluator protocol (/seed_session, /verify): not supported yet")
		case k == "data":
			return errors.New("data=PATH (items from a local JSONL, with protocol=native) is not supported yet: nel seeds every item from the server")
		default:
			return fmt.Errorf("query parameter %q: NeMo reads protocol and data only", kv)
		}
	}
	return nil
}

// Parse reads a benchmark name gym://HOST:PORT[?protocol=evaluator]: the
// client of the running server it names.
func Parse(name string) (*Client, error) {
	n, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	if n.Addr == "" {
		return nil, fmt.Errorf("%s: the server gym://cmd: starts has no address before it runs (the plan's gym service has it)", name)
	}
	return New("http://" + n.Addr), nil
}

// New is the client of the Gym resource server at base (http://HOST:PORT).
func New(base string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: 10 * time.Minute}, Retries: 3}
}

// Endpoint is the server's base URL.
func (c *Client) Endpoint() string { return c.base }

// Seeded is /seed_session's answer (NeMo's SeedSessionResponse), as
// nel serve writes it and gym:// reads it.
type Seeded struct {
	Prompt         string          `json:"prompt"`
	ExpectedAnswer string          `json:"expected_answer"`
	Metadata       map[string]any  `json:"metadata"`
	Messages       []bench.Message `json:"messages"`
	System         *string         `json:"system"`
}

// Size asks /dataset_size.
func (c *Client) Size(ctx context.Context) (int, error) {
	var out struct {
		Size *int `json:"size"`
	}
	if err := c.call(ctx, http.MethodGet, "/dataset_size", nil, &out); err != nil {
		return 0, err
	}
	if out.Size == nil || *out.Size < 0 {
		return 0, fmt.Errorf("gym %s: /dataset_size answered no size", c.base)
	}
	return *out.Size, nil
}

// Seed asks /seed_session for item idx.
func (c *Client) Seed(ctx context.Context, idx int) (*Seeded, error) {
	var out Seeded
	if err := c.call(ctx, http.MethodPost, "/seed_session", map[string]int{"idx": idx}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Verdict is /verify's answer, as nel reads it.
type Verdict struct {
	Reward    *float64       `json:"reward"`
	Extracted *string        `json:"extracted_answer"`
	Details   map[string]any `json:"scoring_details"`
	// Correct is nel serve's: a server that gives it has binary rewards.
	Correct *bool `json:"correct"`
}

// Verify sends response, the model's answer to the item seeded with
// expected and meta, to /verify.
func (c *Client) Verify(ctx context.Context, response, expected string, meta map[string]any) (*Verdict, error) {
	if meta == nil {
		meta = map[string]any{}
	}
	body := map[string]any{"response": response, "expected": expected, "metadata": meta}
	var out Verdict
	if err := c.call(ctx, http.MethodPost, "/verify", body, &out); err != nil {
		return nil, err
	}
	if out.Reward == nil {
		return nil, fmt.Errorf("gym %s: /verify answered no reward", c.base)
	}
	return &out, nil
}

// call sends one request, again after a network failure or a 5xx (up to
// Retries times, a second apart and more), and decodes a 200's body into
// out. Another status is an error with the server's detail.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var last error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		retry, err := c.once(ctx, method, path, body, out)
		if err == nil || !retry {
			return err
		}
		last = err
	}
	return last
}

func (c *Client) once(ctx context.Context, method, path string, body []byte, out any) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("gym %s%s: %w", c.base, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return true, fmt.Errorf("gym %s%s: %w", c.base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Detail any `json:"detail"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Detail != nil {
			msg = fmt.Sprint(e.Detail)
		}
		return resp.StatusCode >= 500, fmt.Errorf("gym %s%s: %s: %s", c.base, path, resp.Status, msg)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return false, fmt.Errorf("gym %s%s: the answer is not the JSON expected: %w", c.base, path, err)
	}
	return false, nil
}

// Definition is the benchmark a gym:// name stands for: its items seeded
// from the server (in its order; the server applies its own selection),
// scored by the server's /verify.
func Definition(name string) (*bench.Benchmark, error) {
	c, err := Parse(name)
	if err != nil {
		return nil, err
	}
	return c.Definition(name), nil
}

// Definition is the benchmark name whose items and rewards come from c's
// server (a managed one's, whose address the job gives at run time).
func (c *Client) Definition(name string) *bench.Benchmark {
	return &bench.Benchmark{
		Name:   name,
		Source: c.base,
		Scorer: "gym_verify",
		Load: func(ctx context.Context, _ bench.Loader, _ map[string]any) (*bench.Set, error) {
			return c.load(ctx)
		},
		// Score has no context (its callers score without an Env: the
		// shard's probe of an empty answer when scoring opens); the HTTP
		// client's timeout bounds it.
		Score: func(it *bench.Item, response string) bench.Score {
			return c.score(context.Background(), it, response)
		},
		ScoreEnv: func(ctx context.Context, _ *bench.Env, it *bench.Item, response string) bench.Score {
			return c.score(ctx, it, response)
		},
	}
}

// load seeds every item the server has.
func (c *Client) load(ctx context.Context) (*bench.Set, error) {
	n, err := c.Size(ctx)
	if err != nil {
		return nil, err
	}
	set := &bench.Set{}
	for i := range n {
		s, err := c.Seed(ctx, i)
		if err != nil {
			return nil, err
		}
		set.Items = append(set.Items, item(s, i))
	}
	return set, nil
}

// item is seeded item i. Its ID is the server's item_id when it gives one
// (nel serve does: the item's content id, so a gym:// run pairs with a
// direct run of the same benchmark), else the content id of what was
// seeded.
func item(s *Seeded, i int) bench.Item {
	msgs := s.Messages
	if len(msgs) == 0 {
		if s.System != nil {
			msgs = append(msgs, bench.Message{Role: "system", Content: *s.System})
		}
		msgs = append(msgs, bench.Message{Role: "user", Content: s.Prompt})
	}
	content := map[string]any{"prompt": s.Prompt, "expected_answer": s.ExpectedAnswer}
	id, _ := s.Metadata["item_id"].(string)
	if id == "" {
		id = bench.ContentID(content)
	}
	cat, _ := s.Metadata["category"].(string)
	return bench.Item{
		ID: id, Index: i, Category: cat, Messages: msgs, Prompt: s.Prompt,
		Expected: s.ExpectedAnswer, Meta: s.Metadata, Content: content,
		Origin: fmt.Sprintf("seed_session idx %d", i),
	}
}

// score asks the server for the reward. A server that cannot be asked
// is a scorer_error (infrastructure), not a wrong answer.
func (c *Client) score(ctx context.Context, it *bench.Item, response string) bench.Score {
	v, err := c.Verify(ctx, response, it.Expected, it.Meta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return bench.Score{Method: "gym_verify"}
		}
		return bench.Score{Method: "gym_verify", Failure: failure.ScorerError, Details: map[string]any{string(failure.ScorerError): err.Error()}}
	}
	s := bench.Score{Reward: *v.Reward, Method: "gym_verify", Details: v.Details}
	if v.Extracted != nil {
		s.Extracted = *v.Extracted
	}
	if v.Correct != nil {
		s.Binary, s.Correct = true, *v.Correct
	}
	return s
}
