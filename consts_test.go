package rudp

import (
	"testing"

	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/stretchr/testify/require"
)

// TestConstantsMatchEngines: the exported constants are written as
// values, so that go doc shows them; each must equal the engine's own.
func TestConstantsMatchEngines(t *testing.T) {
	for name, c := range map[string][2]int64{
		"MaxChannels":             {MaxChannels, porous.MaxChannels},
		"MaxMessagePOROUS":        {MaxMessagePOROUS, porous.MaxPacketLimit},
		"MaxAvaraPassword":        {MaxAvaraPassword, avara.MaxPassword},
		"MaxAvaraCram":            {MaxAvaraCram, avara.MaxCram},
		"AvaraReferenceSkipAfter": {AvaraReferenceSkipAfter, avara.ReferenceSkipAfter},
		"DefaultAvaraVersion":     {DefaultAvaraVersion, avara.DefaultVersion},
		"MaxAvaraClients":         {MaxAvaraClients, avara.MaxClients},
		"MaxMessageWirefox":       {MaxMessageWirefox, wirefox.MaxMessage},
		"MaxWirefoxChannels":      {MaxWirefoxChannels, wirefox.MaxChannels},
		"WirefoxUnordered":        {int64(WirefoxUnordered), int64(wirefox.Unordered)},
		"WirefoxOrdered":          {int64(WirefoxOrdered), int64(wirefox.Ordered)},
		"WirefoxSequenced":        {int64(WirefoxSequenced), int64(wirefox.Sequenced)},
		"StreamMessageNumber":     {int64(StreamMessageNumber), int64(lludp.StreamMessage)},
		"StreamCommand":           {int64(StreamCommand), int64(avara.StreamCommand)},
		"Reliable":                {int64(Reliable), int64(engine.Reliable)},
		"Unreliable":              {int64(Unreliable), int64(engine.Unreliable)},
		"Passive":                 {int64(Passive), int64(engine.Passive)},
	} {
		require.Equal(t, c[1], c[0], name)
	}
	for _, m := range []WirefoxChannelMode{WirefoxUnordered, WirefoxOrdered, WirefoxSequenced} {
		require.Equal(t, wirefox.ChannelMode(m).String(), m.String())
	}
	require.Equal(t, "sequenced", WirefoxSequenced.String())
}
