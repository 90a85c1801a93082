package model

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// appendRequestHead appends r's request line and header as
// http.Request.Write writes them, for the requests nel sends: a body of
// known length, no trailers, no chunking. ok is false for any other
// request, or one with a header value Write would rewrite (a line break,
// made spaces), which then goes through Write (issue 23: Write's formatting was a fifth of a request's
// allocations).
func appendRequestHead(dst []byte, r *http.Request) ([]byte, bool) {
	if r.ContentLength < 0 || (r.ContentLength == 0 && r.Body != nil && r.Body != http.NoBody) ||
		len(r.TransferEncoding) > 0 || len(r.Trailer) > 0 || r.Close || r.URL.Opaque != "" ||
		!token(r.Method) {
		return dst, false
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	uri := r.URL.RequestURI()
	if !fieldValue(host) || !fieldValue(uri) || strings.ContainsAny(uri, " ") {
		return dst, false
	}
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, uri...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	ua := "Go-http-client/1.1"
	if vs, set := r.Header["User-Agent"]; set {
		ua = ""
		if len(vs) > 0 {
			ua = vs[0]
		}
	}
	if ua != "" {
		if !fieldValue(ua) {
			return dst, false
		}
		dst = append(dst, "User-Agent: "...)
		dst = append(dst, asciiTrim(ua)...)
		dst = append(dst, "\r\n"...)
	}
	if r.ContentLength > 0 || r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, r.ContentLength, 10)
		dst = append(dst, "\r\n"...)
	}
	// Write sorts the header's keys and leaves out those it writes itself.
	var keys [16]string
	ks := keys[:0]
	for k := range r.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !token(k) {
			return dst, false
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		for _, v := range r.Header[k] {
			if !fieldValue(v) { // Write rewrites it
				return dst, false
			}
			v = asciiTrim(v)
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}
	return append(dst, "\r\n"...), true
}

// token says whether s is an HTTP token (a method or a header name).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// fieldValue says whether s can stand in a header without ending it.
func fieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 || c == 0x7f || (c < ' ' && c != '\t') {
			return false
		}
	}
	return true
}

// asciiTrim is s without leading and trailing ASCII white space, as Write
// trims header values.
func asciiTrim(s string) string {
	return strings.Trim(s, " \t\r\n")
}

// writeRequest writes r on w: its head by appendRequestHead into w's
// buffer, then its body; or all of it by r.Write. The body is closed, as
// Write closes it.
func writeRequest(w *bufio.Writer, r *http.Request) error {
	head, ok := appendRequestHead(w.AvailableBuffer(), r)
	if !ok {
		return r.Write(w)
	}
	w.Write(head) // a bufio.Writer's error comes back from Flush
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	defer r.Body.Close()
	n, err := io.Copy(w, r.Body)
	if err == nil && n != r.ContentLength {
		err = fmt.Errorf("http: ContentLength=%d with Body length %d", r.ContentLength, n)
	}
	return err
}
