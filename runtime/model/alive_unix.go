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
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
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
