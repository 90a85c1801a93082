package model

import (
	"bufio"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestReadResponseMatches holds readResponse to http.ReadResponse on
// response heads of every kind: what the fast path reads (status, proto,
// header, length, close, body) must be what net/http reads, and what it
// leaves to net/http must come back from it unchanged. fast lists the
// heads the fast path is meant to take.
func TestReadResponseMatches(t *testing.T) {
	const body = `{"choices":[]}`
	cases := []struct {
		raw  string
		fast bool
	}{
		{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n" + body, true},
		{"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 14\r\ndate: x\r\nserver: uvicorn\r\n\r\n" + body, true},
		{"HTTP/1.1 429 Too Many Requests\r\nRetry-After:  3 \r\nContent-Length: 14\r\nX-A: 1\r\nX-A: 2\r\n\r\n" + body, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: Keep-Alive\r\nX-Empty:\r\n\r\n" + body, true},
		{"HTTP/1.1 500 \r\nContent-Length: 0\r\n\r\n", true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 0014\r\n\r\n" + body, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ne\r\n" + body + "\r\n0\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body, false},
		{"HTTP/1.0 200 OK\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 204 No Content\r\n\r\n", false},
		{"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 200\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nX-Folded: a\r\n b\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: +14\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nBad Key: 1\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nX-Ctl: a\x01b\r\nContent-Length: 14\r\n\r\n" + body, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n" + body[:5], true}, // cut short
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, "http://h/v1/chat/completions", nil)
		want, werr := http.ReadResponse(bufio.NewReader(strings.NewReader(c.raw)), req)
		br := bufio.NewReaderSize(strings.NewReader(c.raw), readBufferSize)
		br.Peek(1)
		probe := bufio.NewReaderSize(strings.NewReader(c.raw), readBufferSize)
		probe.Peek(1)
		if _, fast := fastResponse(probe, req); fast != c.fast {
			t.Errorf("%q: fast path %v, want %v", c.raw, fast, c.fast)
		}
		got, gerr := readResponse(br, req)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: error %v, net/http %v", c.raw, gerr, werr)
		}
		if werr != nil {
			continue
		}
		wb, wbErr := io.ReadAll(want.Body)
		gb, gbErr := io.ReadAll(got.Body)
		if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
			got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor || got.Close != want.Close ||
			got.ContentLength != want.ContentLength || !reflect.DeepEqual(got.Header, want.Header) ||
			string(gb) != string(wb) || (gbErr == nil) != (wbErr == nil) || got.Request != req {
			t.Errorf("%q:\n got %+v body %q %v\nwant %+v body %q %v", c.raw, got, gb, gbErr, want, wb, wbErr)
		}
	}
}

// lenBody ends as net/http's body does: the last bytes with io.EOF, a
// body cut short with io.ErrUnexpectedEOF.
func TestLenBodyEnds(t *testing.T) {
	b := &lenBody{br: bufio.NewReader(strings.NewReader("abcdefXYZ")), n: 6}
	p := make([]byte, 10)
	if n, err := b.Read(p); n != 6 || err != io.EOF || string(p[:n]) != "abcdef" {
		t.Fatalf("read %d %v", n, err)
	}
	if n, err := b.Read(p); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d %v", n, err)
	}
	short := &lenBody{br: bufio.NewReader(strings.NewReader("abc")), n: 6}
	if _, err := io.ReadAll(short); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut short: %v", err)
	}
}
