package rudp

import (
	"context"
	"log/slog"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// bindGroup binds n UDP sockets to address (see ListenConfig.Sockets).
// The first binds it alone, as net.ListenPacket does, and then sets
// SO_REUSEPORT, which the kernel honours for the later binds to its port
// (from Linux 4.6 on); the others bind its local address with
// SO_REUSEPORT set first. If one of them fails, the listener keeps the
// first socket alone, and the reason is logged at Debug.
func bindGroup(ctx context.Context, network, address string, n int, log *slog.Logger) ([]net.PacketConn, error) {
	var one net.ListenConfig
	first, err := one.ListenPacket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	pcs := []net.PacketConn{first}
	if n == 1 {
		return pcs, nil
	}
	err = reusePort(first)
	if err == nil {
		group := net.ListenConfig{Control: setReusePort}
		for len(pcs) < n {
			var pc net.PacketConn
			pc, err = group.ListenPacket(ctx, network, first.LocalAddr().String())
			if err != nil {
				break
			}
			pcs = append(pcs, pc)
		}
	}
	if err != nil {
		log.Debug("rudp: the listener reads one socket: no SO_REUSEPORT group", "addr", first.LocalAddr(), "err", err)
		for _, pc := range pcs[1:] {
			_ = pc.Close()
		}
		return pcs[:1], nil
	}
	return pcs, nil
}

// reusePort sets SO_REUSEPORT on pc, a *net.UDPConn, once bound.
func reusePort(pc net.PacketConn) error {
	rc, err := pc.(*net.UDPConn).SyscallConn()
	if err != nil {
		return err
	}
	return setReusePort("", "", rc)
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
