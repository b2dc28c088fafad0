package rudp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "rudp.test"},
		DNSNames:     []string{"rudp.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestTLS runs a TLS 1.3 handshake over a rudp stream on an impaired path
// and echoes 1 MiB through it.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	c, s, _ := streamPair(t, nil, links[1])
	ts := tls.Server(s, &tls.Config{Certificates: []tls.Certificate{cert}})
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "rudp.test"})
	go func() {
		_, _ = io.Copy(ts, ts)
		_ = ts.CloseWrite()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tc.HandshakeContext(ctx))
	require.Equal(t, uint16(tls.VersionTLS13), tc.ConnectionState().Version)

	data := randomBytes(1<<20, 9)
	go func() {
		_, _ = tc.Write(data)
		_ = tc.CloseWrite()
	}()
	got, err := io.ReadAll(tc)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))
}

// TestHTTP serves net/http on a rudp Listener and fetches through an
// http.Transport whose DialContext is a Dialer's, called with "tcp".
func TestHTTP(t *testing.T) {
	body := randomBytes(1<<20, 10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /blob", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) })
	ln, err := Listen("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	var d Dialer
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	url := "http://" + ln.Addr().String()

	for range 3 { // the second and third reuse the conn
		resp, err := client.Get(url + "/blob")
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, bytes.Equal(body, got))
	}
	resp, err := client.Post(url+"/echo", "application/octet-stream", bytes.NewReader(body[:300_000]))
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.True(t, bytes.Equal(body[:300_000], got))
}
