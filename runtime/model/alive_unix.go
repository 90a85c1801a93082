//go:build unix

package model

import (
	"net"
	"syscall"
)

// alive says whether an idle connection is still open: the server has
// neither closed it nor sent anything (an idle HTTP/1.1 connection gets no
// bytes). It peeks without blocking.
func alive(c net.Conn) bool {
	rc, err := rawConn(c)
	if err != nil || rc == nil {
		return err == nil
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		_ = n
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && open
}

// readable waits until c has something to read (bytes, the server's
// close or an error), without a buffer: a request in flight then holds no
// read buffer while its answer is computed (issue 23: at 10,000 in flight
// the 2 KiB buffers were a fifth of the live heap). wait returns c's
// error, such as the deadline that cancelling sets. One is made per
// connection, so that waiting allocates nothing (the socket's RawConn and
// the callback are made once).
//
// Only the first look is a syscall: once the poller reports the socket
// readable, wait returns without peeking again (issue 23: a third syscall
// per request). A wake-up with nothing to read after all is rare, and
// harmless: the read that follows waits in the poller, as any read does,
// with its buffer taken.
type readable struct {
	rc     syscall.RawConn // nil: not a socket, nothing to wait for
	waited bool
	look   func(fd uintptr) bool
	b      [1]byte
}

func newReadable(c net.Conn) *readable {
	r := &readable{}
	r.rc, _ = rawConn(c) // an error: the reads will say it
	r.look = r.peek
	return r
}

func (r *readable) wait() error {
	if r.rc == nil {
		return nil
	}
	r.waited = false
	return r.rc.Read(r.look)
}

func (r *readable) peek(fd uintptr) bool {
	if r.waited {
		return true
	}
	_, _, err := syscall.Recvfrom(int(fd), r.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	r.waited = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return !r.waited // else wait
}

// rawConn is c's socket, or nil when c is not one (nil error: a
// connection of another kind, such as one a test made).
func rawConn(c net.Conn) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, nil
	}
	return sc.SyscallConn()
}
