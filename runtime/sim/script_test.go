package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scriptsFile = `{
  "scripts": [
    {
      "match": "fix calc.py",
      "turns": [
        {"content": "Looking.", "calls": [
          {"name": "file_read", "arguments": {"path": "/app/calc.py"}},
          {"name": "bash", "raw_arguments": "{\"command\": \"ls"}
        ]},
        {"answer": "Fixed."}
      ]
    },
    {"match": "forever", "endless": [{"name": "bash", "arguments": {"command": "sleep 1"}}]}
  ]
}`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func scriptServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	scripts, err := ReadScripts(writeFile(t, "scripts.json", scriptsFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Scripts: scripts})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// post sends a chat request with messages (JSON text) and returns the
// status and the decoded body.
func post(t *testing.T, srv *httptest.Server, messages string) (int, map[string]any) {
	t.Helper()
	body := `{"model":"nel-sim","tools":[{"type":"function","function":{"name":"bash","parameters":{}}}],"messages":` + messages + `}`
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, b)
	}
	return resp.StatusCode, m
}

func message(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	ch, _ := m["choices"].([]any)
	if len(ch) != 1 {
		t.Fatalf("choices: %v", m)
	}
	return ch[0].(map[string]any)
}

// The first turn makes the script's calls, with ids the server can check
// later, arguments compacted or (raw_arguments) as written.
func TestScriptFirstTurn(t *testing.T) {
	s, srv := scriptServer(t)
	status, body := post(t, srv, `[{"role":"system","content":"be brief"},{"role":"user","content":"Please fix calc.py now."}]`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, body)
	}
	ch := message(t, body)
	msg := ch["message"].(map[string]any)
	calls := msg["tool_calls"].([]any)
	if ch["finish_reason"] != "tool_calls" || msg["content"] != "Looking." || len(calls) != 2 {
		t.Fatalf("first turn: %v", ch)
	}
	c0 := calls[0].(map[string]any)
	f0 := c0["function"].(map[string]any)
	f1 := calls[1].(map[string]any)["function"].(map[string]any)
	if c0["id"] != "call_0_0" || c0["type"] != "function" || f0["name"] != "file_read" || f0["arguments"] != `{"path":"/app/calc.py"}` {
		t.Errorf("first call: %v", c0)
	}
	if f1["arguments"] != `{"command": "ls` {
		t.Errorf("raw arguments sent as %q", f1["arguments"])
	}
	if st := s.Stats(); st.Scripted != 1 || st.Unknown != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The second request, with both calls answered, gets the answer; one
// with a call unanswered, answered twice, or under another id is refused.
func TestScriptChecksAnswers(t *testing.T) {
	_, srv := scriptServer(t)
	const u = `{"role":"user","content":"fix calc.py"}`
	const a = `{"role":"assistant","content":"Looking.","tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"file_read","arguments":"{}"}},{"id":"call_0_1","type":"function","function":{"name":"bash","arguments":"{"}}]}`
	tool := func(id string) string { return `{"role":"tool","tool_call_id":"` + id + `","content":"ok"}` }

	status, body := post(t, srv, "["+u+","+a+","+tool("call_0_1")+","+tool("call_0_0")+"]")
	if status != 200 {
		t.Fatalf("answered conversation refused: %d %v", status, body)
	}
	ch := message(t, body)
	if msg := ch["message"].(map[string]any); msg["content"] != "Fixed." || ch["finish_reason"] != "stop" || msg["tool_calls"] != nil {
		t.Errorf("final turn: %v", ch)
	}

	// OpenClaw sends the ids back with only their letters and digits.
	stripped := strings.NewReplacer("call_0_0", "call00", "call_0_1", "call01").Replace(a)
	if status, body := post(t, srv, "["+u+","+stripped+","+tool("call00")+","+tool("call01")+"]"); status != 200 {
		t.Errorf("ids rewritten as OpenClaw does refused: %d %v", status, body)
	}

	for name, msgs := range map[string]string{
		"other id chars": "[" + u + "," + strings.ReplaceAll(a, "call_0_0", "call-0-0") + "," + tool("call-0-0") + "," + tool("call_0_1") + "]",
		"unanswered":     "[" + u + "," + a + "," + tool("call_0_0") + "]",
		"answered_twice": "[" + u + "," + a + "," + tool("call_0_0") + "," + tool("call_0_0") + "]",
		"wrong id":       "[" + u + "," + a + "," + tool("call_0_0") + "," + tool("call_9") + "]",
		"stray tool":     "[" + u + "," + tool("call_0_0") + "]",
		"other calls":    "[" + u + `,{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"bash","arguments":"{}"}}]},` + tool("x") + "]",
	} {
		status, body := post(t, srv, msgs)
		e, _ := body["error"].(map[string]any)
		if status != 400 || e == nil || !strings.Contains(e["message"].(string), "messages[") {
			t.Errorf("%s: status %d body %v, want a 400 naming the message", name, status, body)
		}
	}
}

// An endless script calls every turn; a conversation past the script's
// end is refused rather than answered with something made up.
func TestScriptEndlessAndEnd(t *testing.T) {
	_, srv := scriptServer(t)
	msgs := `[{"role":"user","content":"loop forever"}`
	for turn := range 3 {
		status, body := post(t, srv, msgs+"]")
		if status != 200 {
			t.Fatalf("turn %d: %d %v", turn, status, body)
		}
		msg := message(t, body)["message"].(map[string]any)
		c := msg["tool_calls"].([]any)[0].(map[string]any)
		b, _ := json.Marshal(msg)
		msgs += "," + string(b) + `,{"role":"tool","tool_call_id":"` + c["id"].(string) + `","content":"slept"}`
	}
	const done = `[{"role":"user","content":"fix calc.py"},{"role":"assistant","content":"x","tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"file_read","arguments":"{}"}},{"id":"call_0_1","type":"function","function":{"name":"bash","arguments":"{"}}]},{"role":"tool","tool_call_id":"call_0_0","content":"a"},{"role":"tool","tool_call_id":"call_0_1","content":"b"},{"role":"assistant","content":"Fixed."},{"role":"user","content":"again"}]`
	if status, body := post(t, srv, done); status != 400 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "has 2 turns") {
		t.Errorf("past the end: %d %v", status, body)
	}
}

// A request for a turn that calls tools, offering none, is refused: the
// client forgot them.
func TestScriptNeedsTools(t *testing.T) {
	_, srv := scriptServer(t)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"nel-sim","messages":[{"role":"user","content":"fix calc.py"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "tools: none offered") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// A request no script matches is answered as before (a non-answer here),
// and scripts change the fingerprint.
func TestScriptUnmatched(t *testing.T) {
	s, srv := scriptServer(t)
	status, body := post(t, srv, `[{"role":"user","content":"what is 2+2?"}]`)
	if status != 200 || message(t, body)["message"].(map[string]any)["content"] != UnknownAnswer {
		t.Errorf("unmatched prompt: %d %v", status, body)
	}
	plain, _ := New(Config{})
	if s.Fingerprint() == plain.Fingerprint() {
		t.Error("a scripted server has the fingerprint of a plain one")
	}
}

// Errors in a scripts file name the file, the line and column, and the
// field.
func TestReadScriptsErrors(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"syntax":     {"{\"scripts\": [\n  {\"match\": \"a\",, }]}", "scripts.json:2:17: "},
		"unknown":    {"{\"scripts\": [{\"match\": \"a\", \"turns\": [{\"answer\": \"x\"}]},\n  {\"match\": \"b\", \"turnz\": []}]}", `scripts.json:2:3: scripts[1]: json: unknown field "turnz"`},
		"both":       {"{\"scripts\": [\n {\"match\": \"a\", \"turns\": [{\"calls\": [{\"name\": \"bash\"}], \"answer\": \"x\"}]}]}", "scripts.json:2:27: scripts[0].turns[0]: want calls or an answer, one of them"},
		"no match":   {`{"scripts": [{"endless": [{"name": "bash"}]}]}`, "scripts.json:1:14: scripts[0].match: empty"},
		"early end":  {`{"scripts": [{"match": "a", "turns": [{"answer": "x"}, {"answer": "y"}]}]}`, "scripts[0].turns[0]: an answer ends the conversation"},
		"no name":    {`{"scripts": [{"match": "a", "endless": [{"arguments": {}}]}]}`, "scripts[0].endless[0].name: empty"},
		"two args":   {`{"scripts": [{"match": "a", "endless": [{"name": "b", "arguments": {}, "raw_arguments": "{"}]}]}`, "scripts[0].endless[0]: arguments and raw_arguments both given"},
		"no scripts": {`{"scripts": []}`, "scripts.json:1:13: scripts: want at least one script"},
	} {
		_, err := ReadScripts(writeFile(t, "scripts.json", tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, tc.want)
		}
	}
}

// Faults apply to scripted requests as to any: an empty-choices fault is
// an empty response, and it is counted.
func TestScriptFaults(t *testing.T) {
	scripts, err := ReadScripts(writeFile(t, "scripts.json", scriptsFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Scripts: scripts, Faults: Faults{Empty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	status, body := post(t, srv, `[{"role":"user","content":"fix calc.py"}]`)
	if ch, _ := body["choices"].([]any); status != 200 || ch == nil || len(ch) != 0 {
		t.Errorf("status %d body %v, want empty choices", status, body)
	}
	if st := s.Stats(); st.Faults["empty"] != 1 || st.Scripted != 0 {
		t.Errorf("stats %+v", st)
	}
}
