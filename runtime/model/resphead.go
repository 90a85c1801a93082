package model

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// readResponse reads a response's head from br as http.ReadResponse does.
// The common answer of an OpenAI-compatible server (HTTP/1.1, a status
// with a body, a Content-Length, no transfer coding, its head already
// buffered) is read here in a few allocations, where http.ReadResponse's
// textproto reader took a dozen per request (issue 23); any other goes to
// http.ReadResponse, which sees br untouched.
func readResponse(br *bufio.Reader, r *http.Request) (*http.Response, error) {
	if resp, ok := fastResponse(br, r); ok {
		return resp, nil
	}
	return http.ReadResponse(br, r)
}

// fastResponse reads the head at the start of br's buffer when it is a
// simple one (see readResponse), or consumes nothing and reports false.
func fastResponse(br *bufio.Reader, r *http.Request) (*http.Response, bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 || r.Method == http.MethodHead || !bytes.HasPrefix(buf, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	head := string(buf[:end+2]) // every line with its CRLF
	line, rest, _ := strings.Cut(head, "\r\n")
	status := line[len("HTTP/1.1 "):]
	code, err := strconv.Atoi(status[:min(3, len(status))])
	if len(status) < 4 || status[3] != ' ' || err != nil || code < 200 || code > 599 ||
		code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false
	}
	resp := &http.Response{Status: status, StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, strings.Count(rest, "\r\n")), ContentLength: -1, Request: r}
	vals := make([]string, strings.Count(rest, "\r\n"))
	for i := 0; rest != ""; i++ {
		line, rest, _ = strings.Cut(rest, "\r\n")
		key, val, ok := strings.Cut(line, ":")
		if !ok || !token(key) || !fieldValue(val) {
			return nil, false // no colon, a folded line, a control byte
		}
		key = textproto.CanonicalMIMEHeaderKey(key)
		vals[i] = strings.Trim(val, " \t")
		if old := resp.Header[key]; old != nil {
			resp.Header[key] = append(old, vals[i])
		} else {
			resp.Header[key] = vals[i : i+1 : i+1]
		}
	}
	if !simpleHead(resp) {
		return nil, false
	}
	br.Discard(end + 4)
	resp.Body = &lenBody{br: br, n: resp.ContentLength}
	return resp, true
}

// simpleHead reports whether resp's header asks nothing but a body of
// Content-Length bytes on a connection kept alive, and sets ContentLength.
func simpleHead(resp *http.Response) bool {
	h := resp.Header
	cl := h["Content-Length"]
	if len(cl) != 1 || h["Transfer-Encoding"] != nil || h["Trailer"] != nil {
		return false
	}
	if c, ok := h["Connection"]; ok && (len(c) != 1 || !strings.EqualFold(c[0], "keep-alive")) {
		return false
	}
	for i := 0; i < len(cl[0]); i++ {
		if cl[0][i] < '0' || cl[0][i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(cl[0], 10, 64)
	resp.ContentLength = n
	return err == nil && cl[0] != ""
}

// lenBody is a body of n bytes left in br, read as net/http reads one: the
// last bytes come with io.EOF, and an end before them is
// io.ErrUnexpectedEOF.
type lenBody struct {
	br *bufio.Reader
	n  int64
}

func (b *lenBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	switch {
	case b.n == 0 && (err == nil || err == io.EOF):
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Close does nothing: plainBody closes the connection of a body not read
// to its end.
func (b *lenBody) Close() error { return nil }
