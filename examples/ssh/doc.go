// Package ssh shows golang.org/x/crypto/ssh over rudp streams: an SSH
// server on an accepted rudp stream and a client on a dialed one. The
// package has no API; see its example and tests.
package ssh
