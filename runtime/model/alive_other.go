//go:build !unix

package model

import (
	"bufio"
	"net"
)

// alive cannot peek here: a connection the server closed fails its next
// request, which is retried.
func alive(net.Conn) bool { return true }

// readable cannot wait without reading here: the read buffer is taken at
// once.
type readable struct{ c net.Conn }

func newReadable(c net.Conn) *readable { return &readable{c: c} }

// take returns a read buffer holding c's first bytes, or the error
// reading them.
func (r *readable) take() (*bufio.Reader, error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r.c)
	_, err := br.Peek(1)
	return br, err
}
