//go:build !linux

package socket

import (
	"context"
	"errors"
	"net"
)

// joinGroup fails: a SO_REUSEPORT group that keeps each peer on one
// socket is Linux's only.
func joinGroup(context.Context, string, net.PacketConn, int) ([]net.PacketConn, error) {
	return nil, errors.ErrUnsupported
}
