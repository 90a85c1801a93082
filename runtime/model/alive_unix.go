//go:build unix

package model

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
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
// the 2 KiB buffers were a fifth of the live heap). One is made per
// connection, so that waiting allocates nothing (the socket's RawConn and
// the callback are made once).
//
// Each look is a read: a buffer is taken from the pool and filled by one
// non-blocking read of the socket; when nothing has come yet, the buffer
// goes back and the poller waits. An answer already there costs one
// syscall (a peek and then a read took two; issue 23).
type readable struct {
	rc   syscall.RawConn // nil: not a socket, nothing to wait for
	src  sockSource
	look func(fd uintptr) bool
	br   *bufio.Reader // what the last look filled
}

func newReadable(c net.Conn) *readable {
	r := &readable{src: sockSource{c: c}}
	r.rc, _ = rawConn(c) // an error: the reads will say it
	r.look = r.read
	return r
}

// take waits until c has something to read and returns a read buffer
// holding its first bytes, or the error reading them (br is then still
// the caller's, to give back). err from the wait itself (the deadline
// that cancelling sets) comes with a nil br.
func (r *readable) take() (br *bufio.Reader, err error) {
	if r.rc == nil {
		br = readers.Get().(*bufio.Reader)
		br.Reset(r.src.c)
		_, err = br.Peek(1)
		return br, err
	}
	r.br = nil
	if err := r.rc.Read(r.look); err != nil {
		return nil, err
	}
	br, r.br = r.br, nil
	_, err = br.Peek(1) // the error the look had, or nothing: it is buffered
	return br, err
}

func (r *readable) read(fd uintptr) bool {
	br := readers.Get().(*bufio.Reader)
	r.src.fd, r.src.raw = int(fd), true
	br.Reset(&r.src)
	_, err := br.Peek(1)
	r.src.raw = false
	if err == errAgain {
		br.Reset(nil)
		readers.Put(br)
		return false // wait
	}
	r.br = br
	return true
}

// errAgain is a non-blocking read that found nothing.
var errAgain = errors.New("nothing to read yet")

// sockSource is what a connection's read buffer reads from: c, but inside
// the poller's callback (raw) the socket itself, without blocking, with
// the errors c's Read would give.
type sockSource struct {
	c   net.Conn
	fd  int
	raw bool
}

func (s *sockSource) Read(p []byte) (int, error) {
	if !s.raw {
		return s.c.Read(p)
	}
	n, err := syscall.Read(s.fd, p)
	for err == syscall.EINTR {
		n, err = syscall.Read(s.fd, p)
	}
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		return 0, errAgain
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.c.LocalAddr(), Addr: s.c.RemoteAddr(), Err: os.NewSyscallError("read", err)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
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
