package intercept

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// reasoningReplay is NeMo's reasoning_replay: the reasoning a model gave
// with an assistant turn (reasoning_content, else reasoning) is remembered
// and put back into that turn when a later request of the same session
// replays it without. Agents (and nel's own tool_calling loop, which keeps
// an assistant turn as its content and tool calls) drop the reasoning when
// they send the conversation back, and models trained to see their earlier
// thinking do worse without it.
//
// A turn is known by its tool calls' ids, or, with none, by the hash of its
// content's first 256 characters, within the session: the sample in nel's
// client, the /s/<hex>/ session in `nel-run proxy` (none otherwise). mode
// says how the reasoning goes back: think_tags (the default) wraps it in
// tag_open…tag_close before the content, unless the content starts with
// tag_open already; native sets both reasoning_content and reasoning
// (servers read one or the other), unless the turn has one; both does
// both. At most cache_max_entries turns are remembered, the least recently
// used forgotten first. A caching link listed before this one keys its
// entries by the request as the agent sent it (request edits run in
// recipe order), so a replay hit does not change the cache key.
type reasoningReplay struct {
	cfg reasoningReplayConfig
	log *slog.Logger
	// normalize runs the reasoning link's split on a response before
	// reading it: NeMo runs that link first on the response side whatever
	// the order, and in nel's chain a reasoning listed before this link
	// sees the response after it.
	normalize bool

	mu    sync.Mutex
	order *list.List // of replayEntry, most recently used at the front
	index map[string]*list.Element
}

type reasoningReplayConfig struct {
	Mode            string `json:"mode"`
	TagOpen         string `json:"tag_open"`
	TagClose        string `json:"tag_close"`
	CacheMaxEntries *int   `json:"cache_max_entries"`
	LogMisses       bool   `json:"log_misses"`
}

type replayEntry struct{ key, reasoning string }

// replayHashPrefix is how many characters of a turn's content key it
// (NeMo's 256).
const replayHashPrefix = 256

func newReasoningReplay(raw []byte, log *slog.Logger) (*reasoningReplay, error) {
	var c reasoningReplayConfig
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if err := oneOf("mode", &c.Mode, "think_tags", "native", "both"); err != nil {
		return nil, err
	}
	if c.TagOpen == "" {
		c.TagOpen = "<think>"
	}
	if c.TagClose == "" {
		c.TagClose = "</think>"
	}
	if c.CacheMaxEntries == nil {
		n := 10000
		c.CacheMaxEntries = &n
	} else if *c.CacheMaxEntries < 1 {
		return nil, fmt.Errorf("config.cache_max_entries: %d is not a positive count", *c.CacheMaxEntries)
	}
	return &reasoningReplay{cfg: c, log: log, order: list.New(), index: map[string]*list.Element{}}, nil
}

func (rr *reasoningReplay) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		scope := replayScope(req.Sample)
		if req.Body != nil {
			rr.replay(req, scope)
		}
		resp, err := next(ctx, req)
		if err != nil || resp == nil || !resp.OK() {
			return resp, err
		}
		if body := decodeBody(resp.Body); body != nil {
			if rr.normalize {
				normalizeReasoning(resp, body)
			}
			rr.remember(body, scope)
		}
		return resp, nil
	}
}

// replayScope is the session a request's turns are remembered in.
func replayScope(s Sample) string {
	if s == (Sample{}) {
		return ""
	}
	return fmt.Sprintf("%s/%s#%d", s.Benchmark, s.Item, s.Repeat)
}

// remember stores the reasoning of each choice of a response.
func (rr *reasoningReplay) remember(body map[string]any, scope string) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, ch := range choicesOf(body) {
		msg, _ := ch["message"].(map[string]any)
		if msg == nil {
			continue
		}
		r := nativeReasoning(msg)
		if strings.TrimSpace(r) == "" {
			continue
		}
		for _, k := range turnKeys(msg, scope) {
			rr.store(k, r)
		}
	}
}

// replay puts remembered reasoning back into the request's assistant turns.
func (rr *reasoningReplay) replay(req *Request, scope string) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	hits, misses := 0, 0
	for _, msg := range messagesOf(req) {
		if msg["role"] != "assistant" {
			continue
		}
		hasNative := strings.TrimSpace(nativeReasoning(msg)) != ""
		if rr.cfg.Mode == "native" && hasNative {
			continue
		}
		var r string
		for _, k := range turnKeys(msg, scope) {
			if r = rr.get(k); r != "" {
				break
			}
		}
		if r == "" {
			if msg["tool_calls"] != nil || textOf(msg["content"]) != "" {
				misses++
			}
			continue
		}
		if rr.apply(msg, r, hasNative) {
			hits++
		}
	}
	if hits > 0 || (rr.cfg.LogMisses && misses > 0) {
		rr.log.Debug("reasoning_replay", "scope", scope, "hits", hits, "misses", misses, "mode", rr.cfg.Mode)
	}
}

// apply writes reasoning r into an assistant turn as mode says.
func (rr *reasoningReplay) apply(msg map[string]any, r string, hasNative bool) bool {
	changed := false
	if rr.cfg.Mode != "think_tags" && !hasNative {
		msg["reasoning_content"], msg["reasoning"] = r, r
		changed = true
	}
	if rr.cfg.Mode != "native" && !strings.HasPrefix(strings.TrimLeft(textOf(msg["content"]), " \t\r\n"), rr.cfg.TagOpen) {
		wrapped := rr.cfg.TagOpen + r + rr.cfg.TagClose + "\n"
		switch c := msg["content"].(type) {
		case string:
			msg["content"] = wrapped + c
		case []any:
			msg["content"] = append([]any{map[string]any{"type": "text", "text": wrapped}}, c...)
		default:
			msg["content"] = wrapped
		}
		changed = true
	}
	return changed
}

func (rr *reasoningReplay) store(key, r string) {
	if e, ok := rr.index[key]; ok {
		e.Value = replayEntry{key, r}
		rr.order.MoveToFront(e)
		return
	}
	rr.index[key] = rr.order.PushFront(replayEntry{key, r})
	for rr.order.Len() > *rr.cfg.CacheMaxEntries {
		last := rr.order.Back()
		rr.order.Remove(last)
		delete(rr.index, last.Value.(replayEntry).key)
	}
}

func (rr *reasoningReplay) get(key string) string {
	e, ok := rr.index[key]
	if !ok {
		return ""
	}
	rr.order.MoveToFront(e)
	return e.Value.(replayEntry).reasoning
}

// nativeReasoning is a message's reasoning_content, else its reasoning.
func nativeReasoning(msg map[string]any) string {
	if r, _ := msg["reasoning_content"].(string); r != "" {
		return r
	}
	r, _ := msg["reasoning"].(string)
	return r
}

// turnKeys are the keys an assistant turn is remembered by: one per tool
// call id, or with none the hash of its content's start; none for a turn
// with neither.
func turnKeys(msg map[string]any, scope string) []string {
	var keys []string
	for _, tc := range objects(msg["tool_calls"]) {
		if id, _ := tc["id"].(string); id != "" {
			keys = append(keys, scope+"|c:"+id)
		}
	}
	if len(keys) > 0 {
		return keys
	}
	text := []rune(textOf(msg["content"]))
	if len(text) > replayHashPrefix {
		text = text[:replayHashPrefix]
	}
	if strings.TrimSpace(string(text)) == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(string(text)))
	return []string{scope + "|h:" + hex.EncodeToString(sum[:8])}
}

// textOf is a content's text: a string, or its parts' texts run together
// (the key must not depend on how an agent split its text).
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range objects(c) {
			t, _ := p["text"].(string)
			b.WriteString(t)
		}
		return b.String()
	}
	return ""
}
