package rudp

import "fmt"

// protocolOptions lists the Config fields that only some protocols read
// (the table of protocols says which). Setting one for another protocol is
// an error (see Config.checkProtocolOptions), never a silent no-op: a
// conn asked for WirefoxEncrypt must not come up as plaintext POROUS.
var protocolOptions = []struct {
	name string
	set  func(*Config) bool
}{
	{"Channels", func(c *Config) bool { return c.Channels != 0 }},
	{"LowPriorityChannels", func(c *Config) bool { return c.LowPriorityChannels != nil }},
	{"ChannelWeights", func(c *Config) bool { return c.ChannelWeights != nil }},
	{"MaxUnreliableDelay", func(c *Config) bool { return c.MaxUnreliableDelay != 0 }},
	{"MaxMessage", func(c *Config) bool { return c.MaxMessage != 0 }},
	{"WirefoxChannels", func(c *Config) bool { return c.WirefoxChannels != nil }},
	{"WirefoxEncrypt", func(c *Config) bool { return c.WirefoxEncrypt }},
	{"WirefoxIdentity", func(c *Config) bool { return c.WirefoxIdentity != nil }},
	{"WirefoxServerKey", func(c *Config) bool { return c.WirefoxServerKey != nil }},
	{"Circuit", func(c *Config) bool { return c.Circuit != Circuit{} }},
	{"AcceptCircuit", func(c *Config) bool { return c.AcceptCircuit != nil }},
	{"ResendLimit", func(c *Config) bool { return c.ResendLimit != 0 }},
	{"AvaraPassword", func(c *Config) bool { return c.AvaraPassword != "" }},
	{"AvaraVersion", func(c *Config) bool { return c.AvaraVersion != 0 }},
	{"AvaraCram", func(c *Config) bool { return c.AvaraCram != 0 }},
	{"AvaraSkipAfter", func(c *Config) bool { return c.AvaraSkipAfter != 0 }},
}

// checkProtocolOptions fails for a protocol-only field set (non-zero)
// while Protocol selects another protocol, naming the field, the
// protocol selected and the ones that read it.
func (c *Config) checkProtocolOptions() error {
	for _, o := range protocolOptions {
		if o.set(c) && !c.proto.reads(o.name) {
			return fmt.Errorf("rudp: Config.%s is set but Protocol is %v (it applies to %s only)", o.name, c.Protocol, readers(o.name))
		}
	}
	return nil
}
