package rudp

import (
	"fmt"
	"slices"
	"strings"
)

// protocolOptions lists the Config fields that only some protocols read,
// with the protocols that read them. Setting one for another protocol is
// an error (see Config.checkProtocolOptions), never a silent no-op: a
// conn asked for WirefoxEncrypt must not come up as plaintext POROUS.
var protocolOptions = []struct {
	name      string
	set       func(*Config) bool
	protocols []Protocol
}{
	{"Channels", func(c *Config) bool { return c.Channels != 0 }, []Protocol{POROUS}},
	{"LowPriorityChannels", func(c *Config) bool { return c.LowPriorityChannels != nil }, []Protocol{POROUS}},
	{"ChannelWeights", func(c *Config) bool { return c.ChannelWeights != nil }, []Protocol{POROUS}},
	{"MaxUnreliableDelay", func(c *Config) bool { return c.MaxUnreliableDelay != 0 }, []Protocol{POROUS}},
	{"MaxMessage", func(c *Config) bool { return c.MaxMessage != 0 }, []Protocol{POROUS, Wirefox}},
	{"WirefoxChannels", func(c *Config) bool { return c.WirefoxChannels != nil }, []Protocol{Wirefox}},
	{"WirefoxEncrypt", func(c *Config) bool { return c.WirefoxEncrypt }, []Protocol{Wirefox}},
	{"WirefoxIdentity", func(c *Config) bool { return c.WirefoxIdentity != nil }, []Protocol{Wirefox}},
	{"WirefoxServerKey", func(c *Config) bool { return c.WirefoxServerKey != nil }, []Protocol{Wirefox}},
	{"Circuit", func(c *Config) bool { return c.Circuit != Circuit{} }, []Protocol{LLUDP}},
	{"AcceptCircuit", func(c *Config) bool { return c.AcceptCircuit != nil }, []Protocol{LLUDP}},
	{"ResendLimit", func(c *Config) bool { return c.ResendLimit != 0 }, []Protocol{LLUDP, Wirefox}},
	{"AvaraPassword", func(c *Config) bool { return c.AvaraPassword != "" }, []Protocol{Avara}},
	{"AvaraVersion", func(c *Config) bool { return c.AvaraVersion != 0 }, []Protocol{Avara}},
	{"AvaraCram", func(c *Config) bool { return c.AvaraCram != 0 }, []Protocol{Avara}},
	{"AvaraSkipAfter", func(c *Config) bool { return c.AvaraSkipAfter != 0 }, []Protocol{Avara}},
}

// checkProtocolOptions fails for a protocol-only field set (non-zero)
// while Protocol selects another protocol, naming the field, the
// protocol selected and the ones that read it.
func (c *Config) checkProtocolOptions() error {
	for _, o := range protocolOptions {
		if o.set(c) && !slices.Contains(o.protocols, c.Protocol) {
			names := make([]string, len(o.protocols))
			for i, p := range o.protocols {
				names[i] = p.String()
			}
			return fmt.Errorf("rudp: Config.%s is set but Protocol is %v (it applies to %s only)", o.name, c.Protocol, strings.Join(names, " and "))
		}
	}
	return nil
}
