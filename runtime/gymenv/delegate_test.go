package gymenv

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAgentRequest: the /run body takes the form NeMo's gym_delegation
// sends to the agent: SWE-bench's carries the model access it is given
// (nel's proxy and token) in responses_create_params.metadata; any other
// agent gets the task's own row, tools and reasoning in
// responses_create_params.
func TestAgentRequest(t *testing.T) {
	task := Task{Prompt: "fix it", Messages: []any{map[string]any{"role": "user", "content": "fix it"}},
		Metadata: map[string]any{"instance_id": "i1", "tools": []any{"t"}, "subset": "s"}}
	access := ModelAccess{Model: "m1", URL: "http://proxy/s/ab/v1", Token: "nel-proxy-x"}
	b, _ := json.Marshal(NewAgent("http://g", "OpenHands").Request(task, access))
	var swe struct {
		RCP struct {
			Model    string
			Metadata map[string]any
		} `json:"responses_create_params"`
	}
	json.Unmarshal(b, &swe)
	md := swe.RCP.Metadata
	if swe.RCP.Model != "m1" || md["api_key"] != "nel-proxy-x" || md["model_url"] != "http://proxy/s/ab/v1" ||
		md["instance_id"] != "i1" || md["problem_statement"] != "fix it" || md["split"] != "test" {
		t.Errorf("openhands body %s", b)
	}
	b, _ = json.Marshal(NewAgent("http://g", "my_agent").Request(task, access))
	if string(b) != `{"instance_id":"i1","responses_create_params":{"input":[{"content":"fix it","role":"user"}],"tools":["t"]},"subset":"s"}` {
		t.Errorf("native body %s", b)
	}
}

// TestAgentRun: the agent is found through the head server's
// /server_instances by its name; its answer's text, reward and other
// fields are read back, and an answer without a reward says so.
func TestAgentRun(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/run" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"response":{"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}]},"reward":0.5,"resolved":false,"responses_create_params":{}}`)
	}))
	defer agent.Close()
	head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]map[string]any{
			{"process_name": "other", "server_type": "resources_servers", "url": "http://127.0.0.1:9"},
			{"process_name": "OpenHands", "server_type": "responses_api_agents", "url": agent.URL},
		})
	}))
	defer head.Close()
	res, err := NewAgent(head.URL, "openhands").Run(context.Background(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Response != "done" || !res.HasReward || res.Reward != 0.5 || res.Details["resolved"] != false || len(res.Details) != 1 {
		t.Errorf("result %+v", res)
	}
	// A head server without /server_instances is the agent itself.
	if _, err := NewAgent(agent.URL, "openhands").Run(context.Background(), map[string]any{}); err != nil {
		t.Errorf("head as agent: %v", err)
	}
}

// A discovery that got no answer is not kept: the head server failed its
// first /server_instances (a 503 while it starts), so that sample went to
// the head server; the next sample asks again and reaches the agent.
func TestAgentRediscovers(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"response":"done","reward":1}`)
	}))
	defer agent.Close()
	calls := 0
	head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/server_instances" {
			http.NotFound(w, r)
			return
		}
		if calls++; calls == 1 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode([]map[string]any{{"process_name": "a", "server_type": "responses_api_agents", "url": agent.URL}})
	}))
	defer head.Close()
	a := NewAgent(head.URL, "")
	if _, err := a.Run(context.Background(), map[string]any{}); err == nil {
		t.Fatal("the first sample reached an agent the head server had not named")
	}
	for i := range 2 {
		if res, err := a.Run(context.Background(), map[string]any{}); err != nil || res.Response != "done" {
			t.Fatalf("sample %d after the head server answered: %+v, %v", i+2, res, err)
		}
	}
	if calls != 2 {
		t.Errorf("/server_instances asked %d times, want 2 (once more after its failure, then kept)", calls)
	}
}
