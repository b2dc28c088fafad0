package socket

import (
	"context"
	"log/slog"
	"net"
)

// BindGroup binds n UDP sockets to address, for a listener that reads a
// SO_REUSEPORT group (see Endpoint.Spread). The first binds the address
// alone, as net.ListenPacket does, so that a port in use fails the bind
// (its error returned, no socket open) and a group of another socket is
// never joined; the others join it where the system allows (joinGroup).
// If they cannot, the first socket alone is returned and the reason is
// logged at Debug. n is at least 1.
func BindGroup(ctx context.Context, network, address string, n int, log *slog.Logger) ([]net.PacketConn, error) {
	var one net.ListenConfig
	first, err := one.ListenPacket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	pcs := []net.PacketConn{first}
	if n == 1 {
		return pcs, nil
	}
	more, err := joinGroup(ctx, network, first, n-1)
	if err != nil {
		log.Debug("rudp: the listener reads one socket: no SO_REUSEPORT group", "addr", first.LocalAddr(), "err", err)
		return pcs, nil
	}
	return append(pcs, more...), nil
}
