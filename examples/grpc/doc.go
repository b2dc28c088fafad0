// Package grpc shows gRPC over rudp streams: a grpc.Server serving on a
// rudp listener and a grpc.ClientConn dialing with a rudp.Dialer. The
// package has no API; see its example and tests.
package grpc
