package grpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/rudpkit/rudp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A gRPC server and client whose HTTP/2 connections are rudp streams. The
// server serves the standard health service on a rudp listener; the client
// makes a unary Check call and watches the service's status on a
// server-streaming Watch call while the server changes it.
func Example() {
	ln, err := rudp.Listen("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	hs.SetServingStatus("echo", healthpb.HealthCheckResponse_SERVING)
	go func() { _ = srv.Serve(ln) }() // Serve closes ln when it returns
	defer srv.Stop()

	cc, err := dial(ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	req := &healthpb.HealthCheckRequest{Service: "echo"}
	resp, err := client.Check(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("check:", resp.GetStatus())

	watch, err := client.Watch(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	first, err := watch.Recv() // the status when the watch starts
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("watch:", first.GetStatus())
	hs.SetServingStatus("echo", healthpb.HealthCheckResponse_NOT_SERVING)
	next, err := watch.Recv()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("watch:", next.GetStatus())
	// Output:
	// check: SERVING
	// watch: SERVING
	// watch: NOT_SERVING
}

// dial returns a gRPC client for the server at addr ("host:port") that
// opens its connections as rudp streams instead of TCP. rudp carries no
// TLS of its own, so the transport credentials here are insecure; TLS
// credentials work the same way over a rudp stream.
func dial(addr string) (*grpc.ClientConn, error) {
	var d rudp.Dialer
	return grpc.NewClient(addr,
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "udp", addr)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
}
