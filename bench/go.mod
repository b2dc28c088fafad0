module github.com/rudpkit/rudp/bench

go 1.26.0

replace github.com/rudpkit/rudp => ../

require (
	github.com/quic-go/quic-go v0.65.0
	github.com/rudpkit/rudp v0.0.0-00010101000000-000000000000
	github.com/xtaci/kcp-go/v5 v5.6.72
)

require (
	github.com/klauspost/cpuid/v2 v2.2.6 // indirect
	github.com/klauspost/reedsolomon v1.12.0 // indirect
	github.com/pion/transport/v3 v3.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/sigurn/crc16 v0.0.0-20211026045750-20ab5afb07e3 // indirect
	github.com/tjfoc/gmsm v1.4.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.14.0 // indirect
)
