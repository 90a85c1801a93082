package openclaw

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The front passes each request to the proxy as sent (path, body, key)
// and the streamed answer back, and keeps the session's last chat request.
func TestFront(t *testing.T) {
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.Contains(string(b), "sim") {
			w.Header().Set("X-Nel-Simulated", "true")
		}
		io.WriteString(w, "data: {\"x\":1}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	f, err := StartFront(context.Background(), up.URL+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	base := strings.TrimSuffix(f.URL, "/v1")
	post := func(path, body string) string {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := post("/s/a/v1/chat/completions", `{"n":1}`); got != "data: {\"x\":1}\n\ndata: [DONE]\n\n" {
		t.Errorf("streamed answer %q", got)
	}
	if f.Simulated() {
		t.Error("simulated before any simulated answer")
	}
	post("/s/a/v1/chat/completions", `{"n":2,"sim":1}`)
	if !f.Simulated() {
		t.Error("a simulated answer went unnoticed")
	}
	post("/s/b/v1/chat/completions", `{"n":3}`)
	post("/s/a/v1/models", `{"not":"kept"}`)
	want := []string{
		"/s/a/v1/chat/completions Bearer tok {\"n\":1}",
		"/s/a/v1/chat/completions Bearer tok {\"n\":2,\"sim\":1}",
		"/s/b/v1/chat/completions Bearer tok {\"n\":3}",
		"/s/a/v1/models Bearer tok {\"not\":\"kept\"}",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("upstream saw:\n%s", strings.Join(seen, "\n"))
	}
	if got := string(f.Take("a")); got != `{"n":2,"sim":1}` {
		t.Errorf("session a's last request %q", got)
	}
	if got := f.Take("a"); got != nil {
		t.Errorf("taken twice: %q", got)
	}
	if got := string(f.Take("b")); got != `{"n":3}` {
		t.Errorf("session b's last request %q", got)
	}
}
