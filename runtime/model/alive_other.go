//go:build !unix

package model

import "net"

// alive cannot peek here: a connection the server closed fails its next
// request, which is retried.
func alive(net.Conn) bool { return true }

// readable cannot wait without reading here: the read buffer is taken at
// once.
type readable struct{}

func newReadable(net.Conn) *readable { return &readable{} }

func (*readable) wait() error { return nil }
