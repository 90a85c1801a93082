package gymtools

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/sim"
)

// openAPI is the document a NeMo Gym resource server publishes: FastAPI's
// output for a server with the environment's own endpoints (seed_session,
// verify, health), two tools whose bodies are pydantic models (one nested
// through a $ref), a tool under a nested path, and a GET that is not a
// tool.
const openAPI = `{
  "openapi": "3.1.0",
  "info": {"title": "FastAPI", "version": "0.1.0"},
  "paths": {
    "/seed_session": {"post": {"summary": "Seed Session", "operationId": "seed_session_seed_session_post",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/BaseSeedSessionRequest"}}}, "required": true},
      "responses": {"200": {"description": "Successful Response", "content": {"application/json": {"schema": {}}}}}}},
    "/verify": {"post": {"summary": "Verify", "operationId": "verify_verify_post",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/BaseVerifyRequest"}}}, "required": true},
      "responses": {"200": {"description": "Successful Response"}}}},
    "/health": {"get": {"summary": "Health", "operationId": "health_health_get", "responses": {"200": {"description": "Successful Response"}}}},
    "/get_weather": {"post": {"summary": "Get Weather", "operationId": "get_weather_get_weather_post",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/GetWeatherRequest"}}}, "required": true},
      "responses": {
        "200": {"description": "Successful Response", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GetWeatherResponse"}}}},
        "422": {"description": "Validation Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}}}}}},
    "/search": {"post": {"description": "Search the document store.", "operationId": "search_search_post",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/SearchRequest"}}}, "required": true},
      "responses": {"200": {"description": "Successful Response"}}}},
    "/files/list": {"post": {"operationId": "files_list_post", "responses": {"200": {"description": "Successful Response"}}}},
    "/files/stat": {"get": {"summary": "Stat", "responses": {"200": {"description": "Successful Response"}}}}
  },
  "components": {"schemas": {
    "BaseSeedSessionRequest": {"properties": {}, "type": "object", "title": "BaseSeedSessionRequest"},
    "BaseVerifyRequest": {"properties": {"response": {"type": "object", "title": "Response"}}, "type": "object", "title": "BaseVerifyRequest"},
    "GetWeatherRequest": {"properties": {"city": {"type": "string", "title": "City"}}, "type": "object", "required": ["city"], "title": "GetWeatherRequest"},
    "GetWeatherResponse": {"properties": {"city": {"type": "string", "title": "City"}, "weather_description": {"type": "string", "title": "Weather Description"}}, "type": "object", "required": ["city", "weather_description"], "title": "GetWeatherResponse"},
    "SearchFilter": {"properties": {"year": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Year"}}, "type": "object", "title": "SearchFilter"},
    "SearchRequest": {"properties": {"query": {"type": "string", "title": "Query"}, "filters": {"items": {"$ref": "#/components/schemas/SearchFilter"}, "type": "array", "title": "Filters"}}, "type": "object", "required": ["query"], "title": "SearchRequest"},
    "HTTPValidationError": {"properties": {"detail": {"items": {"$ref": "#/components/schemas/ValidationError"}, "type": "array", "title": "Detail"}}, "type": "object", "title": "HTTPValidationError"},
    "ValidationError": {"properties": {"loc": {"items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "type": "array", "title": "Location"}, "msg": {"type": "string", "title": "Message"}, "type": {"type": "string", "title": "Error Type"}}, "type": "object", "required": ["loc", "msg", "type"], "title": "ValidationError"}
  }}
}`

// gymServer serves openAPI and the tools, recording what they were sent.
type gymServer struct {
	mu     sync.Mutex
	bodies map[string][]string
}

func (g *gymServer) start(t *testing.T) *httptest.Server {
	t.Helper()
	g.bodies = map[string][]string{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, openAPI) })
	record := func(r *http.Request) map[string]any {
		b, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.bodies[r.URL.Path] = append(g.bodies[r.URL.Path], string(b))
		g.mu.Unlock()
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	mux.HandleFunc("POST /get_weather", func(w http.ResponseWriter, r *http.Request) {
		m := record(r)
		city, ok := m["city"].(string)
		if !ok {
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"detail":[{"type":"missing","loc":["body","city"],"msg":"Field required"}]}`)
			return
		}
		io.WriteString(w, `{"city":"`+city+`","weather_description":"cold"}`)
	})
	mux.HandleFunc("POST /files/list", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.WriteString(w, "a.txt b.txt")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Each POST operation but the server's own is a tool, with the request
// body's schema, references resolved, as its parameters.
func TestParse(t *testing.T) {
	specs, err := Parse([]byte(openAPI))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name+"="+s.Path+"="+s.Description)
	}
	want := "files_list=/files/list=files_list get_weather=/get_weather=Get Weather search=/search=Search the document store."
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tools:\n got %s\nwant %s", got, want)
	}
	for name, schema := range map[string]string{
		"files_list":  `{"properties":{},"type":"object"}`,
		"get_weather": `{"properties":{"city":{"title":"City","type":"string"}},"required":["city"],"type":"object"}`,
		"search":      `{"properties":{"filters":{"items":{"properties":{"year":{"anyOf":[{"type":"integer"},{"type":"null"}],"title":"Year"}},"type":"object"},"title":"Filters","type":"array"},"query":{"title":"Query","type":"string"}},"required":["query"],"type":"object"}`,
	} {
		for _, s := range specs {
			if s.Name == name && string(s.Parameters) != schema {
				t.Errorf("%s parameters:\n got %s\nwant %s", name, s.Parameters, schema)
			}
		}
	}
}

// References that cannot be inlined are refused, naming the operation.
func TestParseBadRefs(t *testing.T) {
	for name, doc := range map[string]string{
		"missing": `{"paths":{"/t":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}`,
		"cycle": `{"paths":{"/t":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Node"}}}}}}},
		  "components":{"schemas":{"Node":{"properties":{"child":{"$ref":"#/components/schemas/Node"}}}}}}`,
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "paths./t.post.requestBody") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// A call POSTs the arguments (with the session id) to the tool's path; an
// error status is a tool error the model reads; a server gone is an
// infrastructure failure.
func TestCall(t *testing.T) {
	var g gymServer
	srv := g.start(t)
	tools, err := Tools(context.Background(), Config{BaseURL: srv.URL + "/", SessionID: "s-1"})
	if err != nil {
		t.Fatal(err)
	}
	weather := find(t, tools, "get_weather")
	res, err := weather.Call(context.Background(), json.RawMessage(`{"city":"Oslo"}`))
	if err != nil || res.IsError || res.Output != "{\n  \"city\": \"Oslo\",\n  \"weather_description\": \"cold\"\n}" {
		t.Errorf("call: %+v %v", res, err)
	}
	if got := g.bodies["/get_weather"][0]; got != `{"city":"Oslo","session_id":"s-1"}` {
		t.Errorf("server got %s", got)
	}
	res, err = weather.Call(context.Background(), json.RawMessage(`{"town":"Oslo"}`))
	if err != nil || !res.IsError || !strings.HasPrefix(res.Output, "HTTP 422: ") || !strings.Contains(res.Output, "Field required") {
		t.Errorf("422: %+v %v", res, err)
	}
	res, err = find(t, tools, "files_list").Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || res.Output != "a.txt b.txt" {
		t.Errorf("plain-text answer: %+v %v", res, err)
	}
	srv.Close()
	if _, err := weather.Call(context.Background(), json.RawMessage(`{"city":"Oslo"}`)); err == nil {
		t.Error("a call to a stopped server is not an error")
	}
}

// A server whose document cannot be read, or that offers no tool, is an
// error of Tools.
func TestToolsErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"openapi":"3.1.0","paths":{"/verify":{"post":{}}}}`)
	}))
	defer empty.Close()
	for _, url := range []string{dead, empty.URL} {
		if _, err := Tools(context.Background(), Config{BaseURL: url}); err == nil {
			t.Errorf("%s: no error", url)
		}
	}
}

func find(t *testing.T, tools []agent.Tool, name string) agent.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// End to end: the loop offers the resource server's tools to a scripted
// model over HTTP and the calls reach the server.
func TestLoopWithGymTools(t *testing.T) {
	var g gymServer
	gym := g.start(t)
	tools, err := Tools(context.Background(), Config{BaseURL: gym.URL})
	if err != nil {
		t.Fatal(err)
	}
	final := "It is cold in Oslo."
	s, err := sim.New(sim.Config{Scripts: []sim.Script{{Match: "weather in Oslo", Turns: []sim.ScriptTurn{
		{Calls: []sim.ScriptCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Oslo"}`)}}},
		{Answer: &final},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	msrv := httptest.NewServer(s.Handler())
	defer msrv.Close()
	m, err := model.New(model.Config{BaseURL: msrv.URL + "/v1", Model: sim.DefaultModel, RetryBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res, err := agent.Run(context.Background(), agent.Config{}, m, tools, []model.Message{{Role: "user", Content: "What is the weather in Oslo?"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agent.Answered || res.Answer != final {
		t.Fatalf("outcome %s answer %q (%v)", res.Outcome, res.Answer, res.Err)
	}
	if got := g.bodies["/get_weather"]; len(got) != 1 || got[0] != `{"city":"Oslo"}` {
		t.Errorf("the resource server got %q", got)
	}
	if tt := res.Turns[1]; tt.ToolName != "get_weather" || !strings.Contains(tt.Content, `"weather_description": "cold"`) {
		t.Errorf("tool turn %+v", tt)
	}
}

// Tools an item lists are called at POST /{name}, without the document.
