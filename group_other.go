//go:build !linux

package rudp

import (
	"context"
	"log/slog"
	"net"
)

// bindGroup binds one UDP socket to address: a SO_REUSEPORT group (see
// ListenConfig.Sockets) is Linux's only.
func bindGroup(ctx context.Context, network, address string, _ int, _ *slog.Logger) ([]net.PacketConn, error) {
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return []net.PacketConn{pc}, nil
}
