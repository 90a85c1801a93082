package model

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// A response body closed before its end closes the connection at once:
// Close must not first read the rest of the body (net/http's body.Close
// drains a keep-alive response to its end), which blocks for as long as
// the server takes to send it, and the connection is discarded anyway.
func TestPlainBodyCloseEarlyDoesNotDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf)
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx"))
		<-release // the rest of the body never comes while the test waits
	}()
	defer close(release)
	tr := newPlainTransport(4, &http.Transport{IdleConnTimeout: time.Minute, Proxy: http.ProxyFromEnvironment}, (&net.Dialer{}).DialContext)
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { resp.Body.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close of a body read only in part blocked for 2 s: it drains the body")
	}
}
