package intercept

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// turnCounter is NeMo's turn_counter: a turn budget per agent session and
// reminders of the turns left: near the end (trigger threshold: at 80% and
// 95% of max_turns) or every interval turns (periodic), in a system
// message added last or at the end of the last user message (position).
//
// In `nel-run proxy` a session is an agent's /s/<hex>/ path, else the hash
// of its first non-system message; its requests are counted, and one past
// max_turns is answered 429 session_budget_exhausted, which the agent sees.
// In nel's own client (a recipe's chain) the session is the sample and its
// turn is the one nel's loop says (WithTurn), not a count of requests, so
// the client's retries of one turn are not turns; a turn past max_turns is
// ErrTurnBudget, which the client does not retry and the agent loop ends
// the sample on (outcome turn_budget), as its own max_turns does.
type turnCounter struct {
	cfg turnCounterConfig
	log *slog.Logger
	// proxy: count a session's requests and answer 429 past the budget;
	// else the sample's turn, and ErrTurnBudget.
	proxy bool

	mu       sync.Mutex
	sessions map[string]*turnSession
}

type turnCounterConfig struct {
	Every    *int   `json:"every"`
	MaxTurns *int   `json:"max_turns"`
	Position string `json:"position"`
	Trigger  string `json:"trigger"`
	Interval *int   `json:"interval"`
}

type turnSession struct {
	n    int
	last time.Time
}

// staleSession is how long an idle session is remembered (NeMo's 900 s).
const staleSession = 15 * time.Minute

// ErrTurnBudget is the error of a request past turn_counter's max_turns in
// nel's own client.
var ErrTurnBudget = errors.New("turn_counter: turn budget exhausted")

func newTurnCounter(raw []byte, log *slog.Logger, proxy bool) (Interceptor, error) {
	var c turnCounterConfig
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if err := oneOf("position", &c.Position, "system_message", "user_message"); err != nil {
		return nil, err
	}
	if err := oneOf("trigger", &c.Trigger, "threshold", "periodic"); err != nil {
		return nil, err
	}
	for name, v := range map[string]*int{"every": c.Every, "max_turns": c.MaxTurns, "interval": c.Interval} {
		if v != nil && *v < 1 {
			return nil, fmt.Errorf("config.%s: %d is not a positive count", name, *v)
		}
	}
	return &turnCounter{cfg: c, log: log, proxy: proxy, sessions: map[string]*turnSession{}}, nil
}

func (tc *turnCounter) Wrap(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		key, n := tc.turn(req)
		if every := tc.cfg.Every; n == 1 || every == nil || n%*every == 0 {
			attrs := []any{"session", key, "turn", n}
			if tc.cfg.MaxTurns != nil {
				attrs = append(attrs, "max_turns", *tc.cfg.MaxTurns)
			}
			tc.log.Info("agent turn", attrs...)
		}
		if tc.cfg.MaxTurns == nil || req.Body == nil {
			return next(ctx, req)
		}
		max := *tc.cfg.MaxTurns
		if n > max {
			if !tc.proxy {
				// The sample's row says turn_budget: not a warning.
				tc.log.Info("agent turn refused: max_turns reached", "session", key, "turn", n, "max_turns", max)
				return nil, fmt.Errorf("%w: turn %d of a budget of %d", ErrTurnBudget, n, max)
			}
			tc.log.Warn("agent turn refused: max_turns reached", "session", key, "turn", n, "max_turns", max)
			b, _ := encodeJSON(map[string]any{"error": map[string]any{
				"message": fmt.Sprintf("turn budget exhausted: this session has used its %d turns (request %d); the evaluation ends it", max, n),
				"type":    "invalid_request_error", "code": "session_budget_exhausted"}})
			return &Response{Status: http.StatusTooManyRequests, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}, nil
		}
		if notice := tc.notice(n, max); notice != "" {
			tc.remind(req, notice)
		}
		return next(ctx, req)
	}
}

// turn is the request's session and its turn in it (from 1).
func (tc *turnCounter) turn(req *Request) (string, int) {
	if !tc.proxy {
		s := req.Sample
		n := s.Turn
		if n == 0 {
			n = 1 // a single-turn sample
		}
		return fmt.Sprintf("%s/%s#%d", s.Benchmark, s.Item, s.Repeat), n
	}
	key := tc.sessionKey(req)
	return key, tc.count(key, time.Now())
}

func (tc *turnCounter) sessionKey(req *Request) string {
	if req.Sample.Item != "" {
		return req.Sample.Item
	}
	for _, m := range messagesOf(req) {
		if m["role"] == "system" {
			continue
		}
		if t := contentText(m["content"]); t != "" {
			sum := sha256.Sum256([]byte(t))
			return hex.EncodeToString(sum[:4])
		}
	}
	return "unknown"
}

// count adds a turn to the session and forgets sessions idle too long.
func (tc *turnCounter) count(key string, now time.Time) int {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k, s := range tc.sessions {
		if now.Sub(s.last) > staleSession {
			delete(tc.sessions, k)
		}
	}
	s := tc.sessions[key]
	if s == nil {
		s = &turnSession{}
		tc.sessions[key] = s
	}
	s.n++
	s.last = now
	return s.n
}

// notice is the reminder for turn n of max, "" when none is due.
func (tc *turnCounter) notice(n, max int) string {
	left := max - n
	if tc.cfg.Trigger == "periodic" {
		interval := 1
		if tc.cfg.Interval != nil {
			interval = *tc.cfg.Interval
		}
		if n%interval != 0 {
			return ""
		}
		return fmt.Sprintf("Reminder: %d turns remain for this task.", left)
	}
	switch ratio := float64(n) / float64(max); {
	case ratio >= 0.95:
		return fmt.Sprintf("Turn %d of %d: %d left. Give your final answer now; start nothing new.", n, max, left)
	case ratio >= 0.80:
		return fmt.Sprintf("Turn %d of %d: %d left. Finish what you are doing and prepare your final answer.", n, max, left)
	}
	return ""
}

// remind puts the notice where position says: a system message at the end,
// or after the last user message's text.
func (tc *turnCounter) remind(req *Request, notice string) {
	msgs := messagesOf(req)
	if tc.cfg.Position == "system_message" {
		setMessages(req, append(msgs, map[string]any{"role": "system", "content": notice}))
		return
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] != "user" {
			continue
		}
		switch c := msgs[i]["content"].(type) {
		case string:
			msgs[i]["content"] = joinNotice(c, notice)
		case []any:
			var tail map[string]any
			if len(c) > 0 {
				tail, _ = c[len(c)-1].(map[string]any)
			}
			if tail != nil && tail["type"] == "text" {
				t, _ := tail["text"].(string)
				tail["text"] = joinNotice(t, notice)
			} else {
				msgs[i]["content"] = append(c, map[string]any{"type": "text", "text": notice})
			}
		default:
			msgs[i]["content"] = notice
		}
		setMessages(req, msgs)
		return
	}
}

func joinNotice(text, notice string) string {
	if text == "" {
		return notice
	}
	return text + "\n\n" + notice
}
