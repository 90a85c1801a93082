package intercept

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// pairsDump is NeMo's http_pairs_dump: one JSON file with the count of
// answers by status ("metrics") and the request/response pairs of the
// first first_n calls and of every call not answered 200 ("pairs"). The
// request headers are kept without Authorization (and any other header
// that carries a key). nel writes the file once, when the chain closes
// (the end of a shard, or of `nel-run proxy`), whole or not at all; with
// several shards each writes its own, the shard named before the
// extension (pairs.json → pairs.gsm8k-0.json).
type pairsDump struct {
	path   string
	firstN int

	mu     sync.Mutex
	seen   int
	counts map[string]int
	pairs  []any
}

func newPairsDump(raw []byte, scope string) (Interceptor, error) {
	var c struct {
		DumpPath *string `json:"dump_path"`
		FirstN   *int    `json:"first_n"`
	}
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if c.DumpPath == nil || *c.DumpPath == "" {
		return nil, fmt.Errorf("config.dump_path is required")
	}
	n := 50
	if c.FirstN != nil {
		if *c.FirstN < 0 {
			return nil, fmt.Errorf("config.first_n: %d is negative", *c.FirstN)
		}
		n = *c.FirstN
	}
	path := *c.DumpPath
	if scope != "" {
		ext := filepath.Ext(path)
		path = strings.TrimSuffix(path, ext) + "." + scope + ext
	}
	return &pairsDump{path: path, firstN: n, counts: map[string]int{}}, nil
}

func (p *pairsDump) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		if err != nil || resp == nil {
			return resp, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.seen++
		p.counts[strconv.Itoa(resp.Status)]++
		if p.seen <= p.firstN || resp.Status != http.StatusOK {
			var rbody any = string(resp.Body)
			if m := decodeBody(resp.Body); m != nil {
				rbody = m
			}
			p.pairs = append(p.pairs, map[string]any{
				"request_id": strconv.Itoa(p.seen),
				"request":    map[string]any{"path": req.Path, "headers": safeHeaders(req.Header), "body": req.bodyValue()},
				"response": map[string]any{"status": resp.Status, "headers": safeHeaders(resp.Header), "body": rbody,
					"latency_ms": time.Since(start).Milliseconds()},
			})
		}
		return resp, nil
	}
}

// safeHeaders is h without the headers that carry credentials.
func safeHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		switch strings.ToLower(k) {
		case "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie":
			continue
		}
		out[k] = strings.Join(v, ", ")
	}
	return out
}

// Close writes the file.
func (p *pairsDump) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pairs := p.pairs
	if pairs == nil {
		pairs = []any{}
	}
	b, err := encodeJSON(map[string]any{"metrics": p.counts, "pairs": pairs})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return fmt.Errorf("http_pairs_dump: %w", err)
	}
	return atomicfile.WriteFile(p.path, append(b, '\n'))
}
