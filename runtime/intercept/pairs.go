package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
// that carries a key). With several shards each writes its own, the shard
// named before the extension (pairs.json → pairs.gsm8k-0.json).
//
// NeMo rewrites the whole file after every call; nel writes it once, when
// the chain closes (the end of a shard, or of `nel-run proxy`), whole or
// not at all, and until then appends each kept pair as it happens to an
// in-progress file beside it (pairs.gsm8k-0.inprogress.jsonl: one line a
// pair, {"metrics": counts so far, "pair": …}, synced to disk), so that a
// killed shard leaves every pair it completed. A chain that finds that
// file (a shard started again after a crash) continues it, and the final
// file holds the pairs of every attempt; it is removed once the final file
// is written.
type pairsDump struct {
	path   string
	firstN int

	mu      sync.Mutex
	journal *os.File
	seen    int
	counts  map[string]int
	pairs   []any
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
	p := &pairsDump{path: path, firstN: n, counts: map[string]int{}}
	if err := p.openJournal(); err != nil {
		return nil, fmt.Errorf("http_pairs_dump: %w", err)
	}
	return p, nil
}

// journalPath is the in-progress file beside the dump.
func (p *pairsDump) journalPath() string {
	return strings.TrimSuffix(p.path, filepath.Ext(p.path)) + ".inprogress.jsonl"
}

// journalLine is one line of the in-progress file.
type journalLine struct {
	Metrics map[string]int `json:"metrics"`
	Pair    map[string]any `json:"pair"`
}

// openJournal reads what an earlier attempt left in the in-progress file
// and opens it to append. A last line cut short by the crash is dropped
// (and overwritten: the file is cut back to its last whole line).
func (p *pairsDump) openJournal() error {
	jp := p.journalPath()
	if err := os.MkdirAll(filepath.Dir(jp), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(jp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return err
	}
	whole := bytes.LastIndexByte(b, '\n') + 1
	for _, line := range bytes.Split(b[:whole], []byte("\n")) {
		var l journalLine
		if len(line) == 0 || json.Unmarshal(line, &l) != nil || l.Pair == nil {
			continue
		}
		p.pairs = append(p.pairs, l.Pair)
		p.counts = l.Metrics
	}
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	for _, n := range p.counts {
		p.seen += n
	}
	if err := f.Truncate(int64(whole)); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(int64(whole), io.SeekStart); err != nil {
		f.Close()
		return err
	}
	p.journal = f
	return nil
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
			pair := map[string]any{
				"request_id": strconv.Itoa(p.seen),
				"request":    map[string]any{"path": req.Path, "headers": safeHeaders(req.Header), "body": req.bodyValue()},
				"response": map[string]any{"status": resp.Status, "headers": safeHeaders(resp.Header), "body": rbody,
					"latency_ms": time.Since(start).Milliseconds()},
			}
			p.pairs = append(p.pairs, pair)
			p.record(pair)
		}
		return resp, nil
	}
}

// record appends a pair to the in-progress file and syncs it. Kept pairs
// are few (the first first_n, and failures), so a sync each costs little;
// a write that fails loses the pair from the crash record only (the final
// file still has it), so it is not the model call's error.
func (p *pairsDump) record(pair map[string]any) {
	if p.journal == nil {
		return
	}
	b, err := encodeJSON(journalLine{Metrics: p.counts, Pair: pair})
	if err != nil {
		return
	}
	if _, err := p.journal.Write(append(b, '\n')); err == nil {
		p.journal.Sync()
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

// Close writes the file, then removes the in-progress one.
func (p *pairsDump) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.journal == nil {
		return nil // closed already
	}
	pairs := p.pairs
	if pairs == nil {
		pairs = []any{}
	}
	b, err := encodeJSON(map[string]any{"metrics": p.counts, "pairs": pairs})
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p.path, append(b, '\n')); err != nil {
		return fmt.Errorf("http_pairs_dump: %w", err)
	}
	p.journal.Close()
	p.journal = nil
	if err := os.Remove(p.journalPath()); err != nil {
		return fmt.Errorf("http_pairs_dump: %w", err)
	}
	return nil
}
