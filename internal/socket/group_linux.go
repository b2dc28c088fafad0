package socket

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// joinGroup sets SO_REUSEPORT on first, bound, which the kernel honours
// for the later binds to its port (from Linux 4.6 on), and binds n more
// sockets to its address with SO_REUSEPORT set before the bind. On an
// error it closes those it bound and returns none.
func joinGroup(ctx context.Context, network string, first net.PacketConn, n int) ([]net.PacketConn, error) {
	rc, err := first.(*net.UDPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := setReusePort("", "", rc); err != nil {
		return nil, err
	}
	group := net.ListenConfig{Control: setReusePort}
	var pcs []net.PacketConn
	for range n {
		pc, err := group.ListenPacket(ctx, network, first.LocalAddr().String())
		if err != nil {
			for _, pc := range pcs {
				_ = pc.Close()
			}
			return nil, err
		}
		pcs = append(pcs, pc)
	}
	return pcs, nil
}

// setReusePort sets SO_REUSEPORT on c's socket; it is a
// net.ListenConfig.Control, which runs before the bind.
func setReusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
