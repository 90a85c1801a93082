package model

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The requests nel sends are written byte for byte as http.Request.Write
// writes them; the others (unknown length, a header value with a line
// break) go through Write itself.
func TestWriteRequestAsRequestWrite(t *testing.T) {
	mk := func(method, url, body string, edit func(*http.Request)) func() *http.Request {
		return func() *http.Request {
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			r, err := http.NewRequest(method, url, rd)
			if err != nil {
				t.Fatal(err)
			}
			if edit != nil {
				edit(r)
			}
			return r
		}
	}
	cases := map[string]func() *http.Request{
		"chat": mk("POST", "http://127.0.0.1:8000/v1/chat/completions", `{"model":"m"}`, func(r *http.Request) {
			r.Header.Set("Accept", "application/json")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer k")
		}),
		"headers": mk("POST", "http://h/x?a=1&b=%20", "body", func(r *http.Request) {
			r.Header["X-Multi"] = []string{" one ", "two\t"}
			r.Header.Set("Zed", "z")
			r.Header.Set("Host", "ignored")
			r.Header.Set("Content-Length", "999")
		}),
		"user agent":    mk("POST", "http://h/", "b", func(r *http.Request) { r.Header.Set("User-Agent", " nel/1 ") }),
		"no user agent": mk("POST", "http://h/", "b", func(r *http.Request) { r.Header["User-Agent"] = []string{""} }),
		"host":          mk("POST", "http://h:81/p", "b", func(r *http.Request) { r.Host = "other:82" }),
		"empty post":    mk("POST", "http://h/", "", nil),
		"get":           mk("GET", "http://h/v1/models", "", nil),
		"chunked": mk("POST", "http://h/", "", func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader("abc")), -1
		}),
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := req().Write(&want); err != nil {
				t.Fatal(err)
			}
			w := bufio.NewWriter(&got)
			if err := writeRequest(w, req()); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			if got.String() != want.String() {
				t.Errorf("wrote\n%q\nwant (Request.Write)\n%q", got.String(), want.String())
			}
		})
	}
	// A value that would end the header cannot inject one: Write (to
	// which it goes) turns the line break into spaces.
	r := mk("POST", "http://h/", "b", func(r *http.Request) { r.Header.Set("X", "a\r\nInjected: 1") })()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if err := writeRequest(w, r); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if strings.Contains(out.String(), "\nInjected") || !strings.Contains(out.String(), "\r\nX: a  Injected: 1\r\n") {
		t.Errorf("header with CRLF: wrote %q", out.String())
	}
	// A body shorter than its ContentLength is an error.
	r = mk("POST", "http://h/", "abc", func(r *http.Request) { r.ContentLength = 5 })()
	if err := writeRequest(bufio.NewWriter(io.Discard), r); err == nil {
		t.Error("a 3-byte body with ContentLength 5: no error")
	}
}
