package socket

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSegmentSizeControlMessages: the GSO control message carries the
// segment size, and a GRO control message is read back.
func TestSegmentSizeControlMessages(t *testing.T) {
	oob := putSegmentSize(make([]byte, oobSize), 1290)
	msgs, err := unix.ParseSocketControlMessage(oob)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, int32(unix.IPPROTO_UDP), msgs[0].Header.Level)
	require.Equal(t, int32(unix.UDP_SEGMENT), msgs[0].Header.Type)
	require.Equal(t, uint16(1290), uint16(msgs[0].Data[0])|uint16(msgs[0].Data[1])<<8)

	gro := make([]byte, oobSize)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&gro[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	copy(gro[unix.CmsgLen(0):], []byte{0x0a, 0x05, 0, 0}) // 1290, little-endian
	require.Equal(t, 1290, segmentSize(gro[:unix.CmsgSpace(4)]))
	require.Zero(t, segmentSize(nil))
	require.Zero(t, testing.AllocsPerRun(100, func() { segmentSize(gro[:unix.CmsgSpace(4)]) }))

	// After another control message, and cut short.
	two := append(putSegmentSize(make([]byte, oobSize), 7), gro[:unix.CmsgSpace(4)]...)
	require.Equal(t, 1290, segmentSize(two))
	require.Zero(t, segmentSize(two[:unix.CmsgSpace(2)+unix.CmsgLen(0)+2]), "a GRO message cut short")
	require.Zero(t, segmentSize(gro[:unix.CmsgLen(0)-1]))
}
