// Package sim is a simulated OpenAI-compatible model endpoint. It answers
// from benchmark gold data: a prompt that matches a known item gets the
// benchmark's own correct (or wrong) response, with a configurable accuracy,
// latency and rate of faults (429, 500, connection resets, slow, malformed
// and empty responses).
//
// nel's tests, benchmarks and README quickstart run against it, so it is
// fast (no per-request locks, timers instead of busy waits) and honest about
// what it is: every response carries the header X-Nel-Simulated: true, which
// the model client records. Like a real server it can be fingerprinted
// (runtime/provenance): it answers GET /version, sends "Server: nel-sim",
// and its completions carry a system_fingerprint derived from its
// configuration, so that two simulators that answer differently have
// different fingerprints.
//
// The same request always gets the same answer: whether it is correct, and
// the randomness the benchmark's Respond uses, derive from a hash of the
// prompt, the request's seed and Config.Seed. Faults, on the contrary, are
// drawn afresh for every request, so a retry can succeed.
package sim

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/jsonany"
)

// DefaultModel is the model id the simulator serves by default.
const DefaultModel = "nel-sim"

// Header labels simulated responses (the same as runtime/model's).
const Header = "X-Nel-Simulated"

// ServerName is the Server header of every response.
const ServerName = "nel-sim"

// OffFormatAnswer is the answer Config.OffFormat sends: no answer line,
// no number, no choice letter standing alone, no refusal.
const OffFormatAnswer = "Let me think about this carefully. Working through each part of the question in turn, the pieces fit together, and the result follows from them."

// UnknownAnswer is the response to a prompt that matches no item.
const UnknownAnswer = "I am nel's simulated model and I do not know this question, so I cannot answer it."

// Config configures a Server.
type Config struct {
	// Model is the model id it serves (default "nel-sim"); requests naming
	// another model get 404, as from vLLM.
	Model string
	// Accuracy is the probability that an answer is correct (default 1
	// when zero; use a tiny positive value for "almost never").
	Accuracy float64
	// OffFormat is the probability that the answer to a known item is
	// OffFormatAnswer: reasoning with no final answer in any form a
	// scorer reads, as from a model that ignores the prompt's format.
	// Drawn per request like Accuracy (the same request, the same answer).
	OffFormat float64
	// Latency ± uniform LatencyJitter delays every response.
	Latency, LatencyJitter time.Duration
	// MaxConcurrent, when positive, caps the completions served at once,
	// as a server's batch does (vLLM's max_num_seqs): the others wait in
	// line, and their latency starts when they get a place. Its
	// throughput is then at most MaxConcurrent / Latency, the ideal a
	// client's efficiency is measured against.
	MaxConcurrent int
	Faults        Faults
	Seed          uint64
	// APIKey, when set, is the bearer token every /v1 request must carry,
	// as a hosted endpoint would demand; others get 401. /health is open.
	APIKey string
	// Version is the nel version serving; GET /version answers it with
	// "-sim" appended ("dev-sim" when empty).
	Version string
	Logger  *slog.Logger
	// Answers is a table of fixed responses by prompt (the last user
	// message, or a completion's whole prompt): a prompt in it gets its
	// response, whatever the benchmarks say. Tests of benchmarks the
	// simulator cannot answer by itself (a recipe's own, BYOB) use it,
	// so that the score is known by construction.
	Answers map[string]string
	// Scripts are scripted tool-calling conversations (script.go): a chat
	// request whose first user message contains a script's Match is
	// answered by the script, before the table and the benchmarks.
	Scripts []Script
	// Record, when set, gets the body of every completion request, one
	// compact JSON line each, as it arrived: tests read what the model
	// was sent (an interceptor's system message, a cache's silence).
	Record io.Writer
}

// Faults are per-request probabilities of each fault; their sum is at most 1.
type Faults struct {
	RateLimit   float64 // 429 with Retry-After: 1
	ServerError float64 // 500
	Reset       float64 // the connection is closed without a response
	Slow        float64 // the response comes after 10× the latency + 2s
	Malformed   float64 // 200 with a body that is not JSON
	Empty       float64 // 200 with "choices": []
	// JudgeNonsense is the probability that a judge request (judge.go)
	// gets an answer with no score, grade or class in it. It is drawn
	// apart from the others (which apply to judge requests too).
	JudgeNonsense float64
}

// faultKinds names the faults, in Faults' field order; ParseFaults, Stats
// and String use these names.
var faultKinds = [...]string{"429", "500", "reset", "slow", "malformed", "empty"}

func (f *Faults) list() [len(faultKinds)]*float64 {
	return [...]*float64{&f.RateLimit, &f.ServerError, &f.Reset, &f.Slow, &f.Malformed, &f.Empty}
}

// ParseFaults parses "429=0.01,500=0.02,reset=0.01,slow=0.01,malformed=0.01,empty=0.01"
// (any subset, any order; "rate_limit" and "server_error" are accepted for
// 429 and 500), plus judge_nonsense=P (Faults.JudgeNonsense).
func ParseFaults(s string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	ptrs := f.list()
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Faults{}, fmt.Errorf("faults %q: %q is not KIND=PROBABILITY", s, part)
		}
		switch k = strings.TrimSpace(k); k {
		case "rate_limit":
			k = "429"
		case "server_error":
			k = "500"
		}
		if k == judgeNonsenseKind {
			p, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return Faults{}, fmt.Errorf("faults %q: %s: %w", s, k, err)
			}
			f.JudgeNonsense = p
			continue
		}
		i := indexOf(faultKinds[:], k)
		if i < 0 {
			return Faults{}, fmt.Errorf("faults %q: unknown fault %q (want one of %s, %s)", s, k, strings.Join(faultKinds[:], ", "), judgeNonsenseKind)
		}
		p, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return Faults{}, fmt.Errorf("faults %q: %s: %w", s, k, err)
		}
		*ptrs[i] = p
	}
	if err := f.check(); err != nil {
		return Faults{}, fmt.Errorf("faults %q: %w", s, err)
	}
	return f, nil
}

func (f Faults) check() error {
	sum := 0.0
	for i, p := range f.list() {
		if math.IsNaN(*p) || *p < 0 || *p > 1 {
			return fmt.Errorf("probability of %s is %v, want 0..1", faultKinds[i], *p)
		}
		sum += *p
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("fault probabilities add up to %v, more than 1", sum)
	}
	if p := f.JudgeNonsense; math.IsNaN(p) || p < 0 || p > 1 {
		return fmt.Errorf("probability of %s is %v, want 0..1", judgeNonsenseKind, p)
	}
	return nil
}

// String is f in ParseFaults' syntax, zero probabilities left out.
func (f Faults) String() string {
	var parts []string
	for i, p := range f.list() {
		if *p > 0 {
			parts = append(parts, faultKinds[i]+"="+strconv.FormatFloat(*p, 'g', -1, 64))
		}
	}
	if f.JudgeNonsense > 0 {
		parts = append(parts, judgeNonsenseKind+"="+strconv.FormatFloat(f.JudgeNonsense, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// Dataset is a benchmark's items to answer.
type Dataset struct {
	Benchmark *bench.Benchmark
	Items     []bench.Item
}

// Stats counts what a Server did.
type Stats struct {
	Requests int64
	// Faults counts injected faults by kind: "429", "500", "reset", "slow",
	// "malformed", "empty". A slow response is also answered.
	Faults map[string]int64
	// Answered requests, by whether the answer was meant to be correct;
	// Unknown counts prompts that matched no item.
	Correct, Wrong, Unknown int64
	// Unauthorized counts requests refused for a missing or wrong API key.
	Unauthorized int64
	// Judged counts judge requests answered (judge.go); JudgeNonsense
	// those answered with nonsense.
	Judged, JudgeNonsense int64
	// Table counts requests answered from Config.Answers.
	Table int64
	// Scripted counts requests answered by Config.Scripts.
	Scripted int64
}

type entry struct {
	b  *bench.Benchmark
	it *bench.Item
}

// Server is the simulated endpoint. Its handler is safe for concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	fp     string           // system_fingerprint
	chat   map[string]entry // by the last user message
	prompt map[string]entry // by Item.Prompt
	items  int

	requests, correct, wrong, unknown atomic.Int64
	unauthorized                      atomic.Int64
	judged, nonsense                  atomic.Int64
	table                             atomic.Int64
	scriptedN                         atomic.Int64
	faults                            [len(faultKinds)]atomic.Int64
	ids                               atomic.Uint64
	recordMu                          sync.Mutex
	slots                             chan struct{} // MaxConcurrent; nil: no cap
}

// New returns a server answering the items of sets.
func New(cfg Config, sets ...Dataset) (*Server, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Accuracy == 0 {
		cfg.Accuracy = 1
	}
	if math.IsNaN(cfg.Accuracy) || cfg.Accuracy < 0 || cfg.Accuracy > 1 {
		return nil, fmt.Errorf("simulated endpoint: accuracy %v, want 0..1", cfg.Accuracy)
	}
	if math.IsNaN(cfg.OffFormat) || cfg.OffFormat < 0 || cfg.OffFormat > 1 {
		return nil, fmt.Errorf("simulated endpoint: off-format probability %v, want 0..1", cfg.OffFormat)
	}
	if cfg.Latency < 0 || cfg.LatencyJitter < 0 {
		return nil, errors.New("simulated endpoint: latency and jitter must not be negative")
	}
	if err := cfg.Faults.check(); err != nil {
		return nil, fmt.Errorf("simulated endpoint: %w", err)
	}
	if cfg.MaxConcurrent < 0 {
		return nil, fmt.Errorf("simulated endpoint: max concurrent %d, want 0 (no cap) or more", cfg.MaxConcurrent)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, chat: map[string]entry{}, prompt: map[string]entry{}, fp: fingerprint(cfg)}
	if cfg.MaxConcurrent > 0 {
		s.slots = make(chan struct{}, cfg.MaxConcurrent)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	dups := 0
	for _, set := range sets {
		if set.Benchmark == nil {
			return nil, errors.New("simulated endpoint: dataset without a benchmark")
		}
		if set.Benchmark.Respond == nil {
			return nil, fmt.Errorf("simulated endpoint: benchmark %s cannot write responses (no Respond)", set.Benchmark.Name)
		}
		for i := range set.Items {
			it := &set.Items[i]
			e := entry{set.Benchmark, it}
			s.items++
			// The first item of a text wins: two items with the same
			// prompt cannot be told apart by a server either.
			if k, ok := lastUser(it.Messages); ok {
				if _, dup := s.chat[k]; dup {
					dups++
				} else {
					s.chat[k] = e
				}
			}
			if it.Prompt != "" {
				if _, dup := s.prompt[it.Prompt]; !dup {
					s.prompt[it.Prompt] = e
				}
			}
		}
	}
	if dups > 0 {
		s.log.Warn("simulated endpoint: items share a prompt; the first one answers", "duplicates", dups)
	}
	return s, nil
}

// fingerprint is the system_fingerprint of a server with cfg:
// "nel-sim-" and 12 hex digits of a hash of what decides its answers.
func fingerprint(cfg Config) string {
	what := fmt.Appendf(nil, "model=%q accuracy=%s seed=%d",
		cfg.Model, strconv.FormatFloat(cfg.Accuracy, 'g', -1, 64), cfg.Seed)
	if cfg.OffFormat > 0 {
		// Only when set, so that every other simulator keeps its print.
		what = fmt.Appendf(what, " off_format=%s", strconv.FormatFloat(cfg.OffFormat, 'g', -1, 64))
	}
	if len(cfg.Answers) > 0 {
		// A table changes the answers; without one the fingerprint is
		// what it was before tables existed.
		keys := make([]string, 0, len(cfg.Answers))
		for k := range cfg.Answers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			what = fmt.Appendf(what, " answer=%q:%q", k, cfg.Answers[k])
		}
	}
	if len(cfg.Scripts) > 0 {
		// Like the table: only when given.
		b, _ := json.Marshal(cfg.Scripts)
		what = fmt.Appendf(what, " scripts=%x", sha256.Sum256(b))
	}
	h := sha256.Sum256(what)
	return "nel-sim-" + hex.EncodeToString(h[:6])
}

// Fingerprint is the system_fingerprint the server's completions carry.
func (s *Server) Fingerprint() string { return s.fp }

// Items is how many items the server knows.
func (s *Server) Items() int { return s.items }

// Config returns the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

func lastUser(msgs []bench.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content, true
		}
	}
	return "", false
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests: s.requests.Load(),
		Correct:  s.correct.Load(),
		Wrong:    s.wrong.Load(),
		Unknown:  s.unknown.Load(),
		Faults:   map[string]int64{},

		Unauthorized:  s.unauthorized.Load(),
		Judged:        s.judged.Load(),
		JudgeNonsense: s.nonsense.Load(),
		Table:         s.table.Load(),
		Scripted:      s.scriptedN.Load(),
	}
	for i, k := range faultKinds {
		st.Faults[k] = s.faults[i].Load()
	}
	return st
}

// Handler serves POST /v1/chat/completions, POST /v1/completions,
// GET /v1/models, GET /version and GET /health.
func (s *Server) Handler() http.Handler {
	h := s.handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", ServerName)
		h.ServeHTTP(w, r)
	})
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /version", s.version)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(Header, "true")
		w.Write([]byte("ok\n"))
	})
	if s.cfg.APIKey == "" {
		return mux
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if r.URL.Path != "/health" && r.URL.Path != "/version" && subtle.ConstantTimeCompare(got, want) != 1 {
			s.unauthorized.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(Header, "true")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided (nel simulated endpoint)","type":"invalid_request_error","code":"invalid_api_key"}}`))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.Marshal(map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "nel-sim", "root": s.cfg.Model,
		}},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(Header, "true")
	w.Write(b)
}

// version answers as vLLM's and SGLang's GET /version do, open like
// /health (vLLM's --api-key guards only /v1).
func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	v := s.cfg.Version
	if v == "" {
		v = "dev"
	}
	b, _ := json.Marshal(map[string]string{"version": v + "-sim"})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(Header, "true")
	w.Write(b)
}

// request is what the simulator reads of a completion request.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		// A tool-using conversation's (script.go).
		ToolCalls  []toolCall `json:"tool_calls"`
		ToolCallID string     `json:"tool_call_id"`
	} `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	Prompt              json.RawMessage   `json:"prompt"`
	MaxTokens           *int64            `json:"max_tokens"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	Seed                *int64            `json:"seed"`
}

// fault draws this request's fault: an index into faultKinds, or -1.
func (s *Server) fault() int {
	u := rand.Float64() // the runtime's per-thread generator: cheap, no lock
	for i, p := range s.cfg.Faults.list() {
		if u < *p {
			return i
		}
		u -= *p
	}
	return -1
}

const (
	fRateLimit = iota
	fServerError
	fReset
	fSlow
	fMalformed
	fEmpty
)

// decode reads a completion request, recording its body.
func (s *Server) decode(r *http.Request) (request, error) {
	var req request
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return req, err
	}
	s.record(raw)
	// json.Unmarshal decodes a well-formed body without the Decoder's copy
	// of it (the simulator shares the benchmarks' CPUs with the client it
	// measures). A Decoder takes what follows the first value too, so a
	// body Unmarshal refuses goes to one, as before.
	if json.Unmarshal(raw, &req) == nil {
		return req, nil
	}
	req = request{}
	err = json.NewDecoder(bytes.NewReader(raw)).Decode(&req)
	return req, err
}

// record writes a request body to Config.Record.
func (s *Server) record(raw []byte) {
	if s.cfg.Record == nil {
		return
	}
	var line bytes.Buffer
	if json.Compact(&line, raw) != nil {
		line.Reset()
		line.Write(bytes.ReplaceAll(raw, []byte("\n"), []byte(" ")))
	}
	line.WriteByte('\n')
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if _, err := s.cfg.Record.Write(line.Bytes()); err != nil {
		s.log.Warn("sim: recording a request", "err", err)
	}
}

// promptOf is the text that picks the answer (the last user message, or
// the completion's prompt) and the prompt's length in bytes.
func promptOf(req *request, chat bool) (text string, promptLen int) {
	if !chat {
		text = promptText(req.Prompt)
		return text, len(text)
	}
	for _, m := range req.Messages {
		c := contentText(m.Content)
		promptLen += len(c)
		if m.Role == "user" {
			text = c
		}
	}
	return text, promptLen
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	s.requests.Add(1)
	h := w.Header()
	h.Set(Header, "true")
	h.Set("Content-Type", "application/json")

	req, err := s.decode(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "request body: "+err.Error())
		return
	}
	if req.Model != s.cfg.Model {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	if chat && len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "messages: empty")
		return
	}
	text, promptLen := promptOf(&req, chat)
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done():
			return // the client left while in line
		}
	}
	f := s.fault()
	delay := s.latency()
	if f == fSlow {
		delay = 10*s.cfg.Latency + 2*time.Second
	}
	if f >= 0 {
		s.faults[f].Add(1)
	}
	if delay > 0 && !sleep(r, delay) {
		return // the client left
	}
	switch f {
	case fRateLimit:
		h.Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "RateLimitError", "simulated rate limit")
		return
	case fServerError:
		writeError(w, http.StatusInternalServerError, "InternalServerError", "simulated server error")
		return
	case fReset:
		reset(w)
		return
	case fMalformed:
		w.Write([]byte(`{"id":"simulated-malformed","object":"chat.completion","choices":[{"index":0,"message":{"role":"assist`))
		return
	}
	if chat {
		if sc := s.scriptFor(&req); sc != nil {
			if f == fEmpty { // counted above: injected here too
				w.Write(s.body(true, true, "", "stop", promptLen))
				return
			}
			s.scripted(w, sc, &req)
			return
		}
	}

	seed := int64(0)
	if req.Seed != nil {
		seed = *req.Seed
	}
	var e entry
	var ok bool
	if chat {
		e, ok = s.chat[text]
	} else {
		e, ok = s.prompt[text]
	}
	answer := UnknownAnswer
	if ta, inTable := s.cfg.Answers[text]; inTable {
		answer = ta
		s.table.Add(1)
	} else if ja, judged := s.judge(text); judged {
		answer = ja
	} else if ok {
		hv := s.hash(text, seed)
		correct := float64(hv>>11)/(1<<53) < s.cfg.Accuracy
		answer = e.b.Respond(e.it, correct, rand.New(rand.NewPCG(hv, hv^0x9e3779b97f4a7c15)))
		if float64((hv*0x9e3779b97f4a7c15)>>11)/(1<<53) < s.cfg.OffFormat {
			answer = OffFormatAnswer
		}
		if correct {
			s.correct.Add(1)
		} else {
			s.wrong.Add(1)
		}
	} else {
		s.unknown.Add(1)
	}

	finish := "stop"
	maxTokens := req.MaxTokens
	if maxTokens == nil {
		maxTokens = req.MaxCompletionTokens
	}
	if maxTokens != nil && *maxTokens >= 0 && int64(len(answer)) > *maxTokens*4 {
		answer = truncate(answer, int(*maxTokens*4))
		finish = "length"
	}
	if f == fEmpty {
		answer = ""
	}
	w.Write(s.body(chat, f == fEmpty, answer, finish, promptLen))
}

// body writes a completion response by hand: it is the hot path, and the
// shape is fixed.
func (s *Server) body(chat, empty bool, answer, finish string, promptLen int) []byte {
	pt, ct := tokens(promptLen), tokens(len(answer))
	b := make([]byte, 0, 320+len(answer)+len(answer)/8)
	b = append(b, `{"id":"`...)
	if chat {
		b = append(b, "chatcmpl-sim-"...)
	} else {
		b = append(b, "cmpl-sim-"...)
	}
	b = strconv.AppendUint(b, s.ids.Add(1), 16)
	if chat {
		b = append(b, `","object":"chat.completion","created":`...)
	} else {
		b = append(b, `","object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendString(b, s.cfg.Model)
	b = append(b, `,"system_fingerprint":`...)
	b = appendString(b, s.fp)
	b = append(b, `,"choices":[`...)
	if !empty {
		if chat {
			b = append(b, `{"index":0,"message":{"role":"assistant","content":`...)
			b = appendString(b, answer)
			b = append(b, `},"logprobs":null,"finish_reason":"`...)
		} else {
			b = append(b, `{"index":0,"text":`...)
			b = appendString(b, answer)
			b = append(b, `,"logprobs":null,"finish_reason":"`...)
		}
		b = append(b, finish...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(pt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(ct), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(pt+ct), 10)
	return append(b, "}}\n"...)
}

// tokens approximates a token count as a quarter of the characters.
func tokens(n int) int { return (n + 3) / 4 }

// appendString appends s as a JSON string (jsonany's writer: the bytes an
// Encoder without HTML escaping writes).
func appendString(b []byte, s string) []byte { return jsonany.AppendStringNoHTML(b, s) }

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// hash is the request's identity for the answer: prompt text, request seed
// and server seed. FNV-1a, so it is the same in every process.
func (s *Server) hash(text string, seed int64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(seed))
	binary.LittleEndian.PutUint64(buf[8:], s.cfg.Seed)
	h.Write(buf[:])
	return mix(h.Sum64())
}

// mix is splitmix64's finalizer: FNV's low bits are weak, and the top 53
// bits decide correctness.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (s *Server) latency() time.Duration {
	d := s.cfg.Latency
	if j := s.cfg.LatencyJitter; j > 0 {
		d += time.Duration(rand.Int64N(int64(2*j)+1)) - j
	}
	return max(d, 0)
}

// sleep waits d, or until the client goes away (false).
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// reset closes the connection without a response, with an RST where it can.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b := []byte(`{"object":"error","error":{"message":`)
	b = appendString(b, msg)
	b = append(b, `,"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, "}}\n"...)
	w.WriteHeader(status)
	w.Write(b)
}

// contentText is a message's text: a string, or the text parts of a list.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// promptText is a completion prompt: a string, or the first of a list.
func promptText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		return list[0]
	}
	return ""
}

// FaultKinds lists the fault names of Stats.Faults and ParseFaults, sorted.
func FaultKinds() []string {
	k := append([]string(nil), faultKinds[:]...)
	sort.Strings(k)
	return k
}
