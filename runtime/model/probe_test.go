package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Each way an endpoint can be unreachable is said in words, with its URL,
// within seconds.
func TestProbeUnreachable(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, c := range []struct {
		name, url, want string
	}{
		// .invalid never resolves (RFC 2606).
		{"dns", "http://nel-no-such-host.invalid/v1", `no such host "nel-no-such-host.invalid"`},
		{"tls to plain http", strings.Replace(plain.URL, "http://", "https://", 1) + "/v1", "does not speak TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Config{BaseURL: c.url, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = cl.Probe(context.Background())
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.url) {
				t.Fatalf("Probe: %v; want ErrUnreachable saying %q and the URL", err, c.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// What a live server says: its model list; no list (404) is no verdict;
// a refused key is ErrUnauthorized without the key in the text.
func TestProbeAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			w.Write([]byte(`{"object":"list","data":[{"id":"a"},{"id":"b"}]}`))
		case "Bearer nolist":
			http.NotFound(w, r)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"bad key sk-secret-123"}`))
		}
	}))
	defer srv.Close()
	probe := func(key string) (*ProbeResult, error) {
		cl, err := New(Config{BaseURL: srv.URL + "/v1", Model: "a", APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return cl.Probe(context.Background())
	}
	res, err := probe("good")
	if err != nil || strings.Join(res.Models, ",") != "a,b" || !res.Offers("a") || res.Offers("c") {
		t.Errorf("good key: %+v, %v", res, err)
	}
	res, err = probe("nolist")
	if err != nil || res.Status != 404 || !res.Offers("anything") {
		t.Errorf("no model list: %+v, %v", res, err)
	}
	_, err = probe("sk-secret-123")
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "sk-secret-123") {
		t.Errorf("refused key: %v", err)
	}
}
