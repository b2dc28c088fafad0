module github.com/rudpkit/rudp/examples

go 1.26.0

replace github.com/rudpkit/rudp => ../

require (
	github.com/pion/logging v0.2.4
	github.com/pion/transport/v3 v3.1.1
	github.com/rudpkit/rudp v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.59.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/sigurn/crc16 v0.0.0-20211026045750-20ab5afb07e3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
