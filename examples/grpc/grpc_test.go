package grpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/pion/transport/v3/test"
	"github.com/rudpkit/rudp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// callTimeout bounds every call of these tests, so that a stall fails the
// test instead of hanging it.
const callTimeout = 30 * time.Second

// startServer serves the health service (with service "echo" SERVING) and
// an echoing TestService on a new rudp listener on the loopback interface.
func startServer(t *testing.T) (*grpc.Server, *health.Server, net.Addr) {
	t.Helper()
	ln, err := rudp.Listen("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	hs.SetServingStatus("echo", healthpb.HealthCheckResponse_SERVING)
	testpb.RegisterTestServiceServer(srv, echoServer{})
	go func() { _ = srv.Serve(ln) }()
	return srv, hs, ln.Addr()
}

// echoServer's FullDuplexCall answers each request with its payload.
type echoServer struct {
	testpb.UnimplementedTestServiceServer
}

func (echoServer) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// TestHealth: unary Check calls get each service's status or NotFound, and
// a server-streaming Watch delivers every status change in order; after
// both ends stop, no goroutine is left.
func TestHealth(t *testing.T) {
	defer test.CheckRoutines(t)()
	srv, hs, addr := startServer(t)
	defer srv.Stop()
	cc, err := dial(addr.String())
	require.NoError(t, err)
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()

	for service, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"":     healthpb.HealthCheckResponse_SERVING, // the server as a whole
		"echo": healthpb.HealthCheckResponse_SERVING,
	} {
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err, "service %q", service)
		require.Equal(t, want, resp.GetStatus(), "service %q", service)
	}
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "unknown"})
	require.Equal(t, codes.NotFound, status.Code(err), "%v", err)

	watch, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "echo"})
	require.NoError(t, err)
	changes := []healthpb.HealthCheckResponse_ServingStatus{
		healthpb.HealthCheckResponse_NOT_SERVING,
		healthpb.HealthCheckResponse_SERVING,
		healthpb.HealthCheckResponse_NOT_SERVING,
	}
	resp, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	for i, s := range changes {
		hs.SetServingStatus("echo", s)
		resp, err := watch.Recv()
		require.NoError(t, err, "change %d", i)
		require.Equal(t, s, resp.GetStatus(), "change %d", i)
	}
}

// TestFullDuplexEcho: a bidirectional stream carries 2 MiB of messages
// each way, sent while the echoes come back, and every echo is exact.
func TestFullDuplexEcho(t *testing.T) {
	defer test.CheckRoutines(t)()
	srv, _, addr := startServer(t)
	defer srv.Stop()
	cc, err := dial(addr.String())
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	stream, err := testpb.NewTestServiceClient(cc).FullDuplexCall(ctx)
	require.NoError(t, err)

	const count, size = 32, 64 << 10
	rng := rand.NewChaCha8([32]byte{1})
	bodies := make([][]byte, count)
	for i := range bodies {
		bodies[i] = make([]byte, size)
		_, _ = rng.Read(bodies[i])
	}
	sent := make(chan error, 1)
	go func() {
		for _, b := range bodies {
			req := &testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: b}}
			if err := stream.Send(req); err != nil {
				sent <- err
				return
			}
		}
		sent <- stream.CloseSend()
	}()
	for i, want := range bodies {
		resp, err := stream.Recv()
		require.NoError(t, err, "message %d", i)
		require.True(t, bytes.Equal(want, resp.GetPayload().GetBody()), "message %d differs", i)
	}
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, <-sent)
}
