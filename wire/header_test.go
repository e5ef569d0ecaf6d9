package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// headerCases are requests whose headers cover v0 (ControlledShutdown v0),
// v1 (non-flexible) and v2 (flexible), with and without a client id.
func headerCases() []kmsg.Request {
	controlled := kmsg.NewPtrControlledShutdownRequest()
	controlled.Version = 0
	controlled.BrokerID = 3
	produce3 := sampleProduceRequest(3, nil)
	produce13 := sampleProduceRequest(13, kmsg.StringPtr("txn"))
	apiVersions0 := kmsg.NewPtrApiVersionsRequest()
	apiVersions0.Version = 0
	apiVersions4 := kmsg.NewPtrApiVersionsRequest()
	apiVersions4.Version = 4
	apiVersions4.ClientSoftwareName = "exactly"
	apiVersions4.ClientSoftwareVersion = "1.0"
	metadata1 := kmsg.NewPtrMetadataRequest()
	metadata1.Version = 1
	metadata12 := kmsg.NewPtrMetadataRequest()
	metadata12.Version = 12
	endTxn5 := kmsg.NewPtrEndTxnRequest()
	endTxn5.Version = 5
	endTxn5.TransactionalID = "t"
	return []kmsg.Request{controlled, produce3, produce13, apiVersions0, apiVersions4, metadata1, metadata12, endTxn5}
}

// TestRequestHeaderMatchesKmsg frames requests as kgo does (kmsg's
// RequestFormatter), reads them with FrameReader and ParseRequestHeader, and
// checks that the body decodes back with kmsg; then re-encodes the header
// with AppendRequestHeader and checks the frame is byte-identical.
func TestRequestHeaderMatchesKmsg(t *testing.T) {
	for _, clientID := range []*string{nil, kmsg.StringPtr("client-1"), kmsg.StringPtr("")} {
		formatter := &kmsg.RequestFormatter{}
		if clientID != nil {
			formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
		}
		for i, req := range headerCases() {
			name := fmt.Sprintf("%s-v%d/client=%v", kmsg.NameForKey(req.Key()), req.GetVersion(), clientID != nil)
			t.Run(name, func(t *testing.T) {
				correlationID := int32(1000 + i)
				framed := frameRequest(formatter, req, correlationID)
				checkRequestFrame(t, framed, req, correlationID, clientID)
			})
		}
	}
}

// frameRequest frames req as kgo does. kmsg's formatter writes only the
// header for ControlledShutdown v0 (header v0) and leaves the size unset,
// so that one case is framed by hand: key, version, correlation id, body.
func frameRequest(formatter *kmsg.RequestFormatter, req kmsg.Request, correlationID int32) []byte {
	if req.Key() != APIControlledShutdown || req.GetVersion() != 0 {
		return formatter.AppendRequest(nil, req, correlationID)
	}
	framed := binary.BigEndian.AppendUint32(nil, 0)
	framed = binary.BigEndian.AppendUint16(framed, uint16(req.Key()))
	framed = binary.BigEndian.AppendUint16(framed, uint16(req.GetVersion()))
	framed = binary.BigEndian.AppendUint32(framed, uint32(correlationID))
	framed = req.AppendTo(framed)
	binary.BigEndian.PutUint32(framed, uint32(len(framed)-4))
	return framed
}

func checkRequestFrame(t *testing.T, framed []byte, req kmsg.Request, correlationID int32, clientID *string) {
	t.Helper()
	frames := FrameReader{R: bufio.NewReader(bytes.NewReader(framed))}
	frame, err := frames.Next(nil)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	if _, err := frames.Next(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("after the only frame: %v, want EOF", err)
	}
	wantHeaderVersion := int16(1)
	if req.IsFlexible() {
		wantHeaderVersion = 2
	}
	if req.Key() == APIControlledShutdown && req.GetVersion() == 0 {
		wantHeaderVersion = 0
	}
	header, body, err := ParseRequestHeaderVersion(frame, wantHeaderVersion)
	if err != nil {
		t.Fatalf("parse header: %v", err)
	}
	if wantHeaderVersion > 0 {
		derived, derivedBody, err := ParseRequestHeader(frame)
		if err != nil || derived.HeaderVersion != wantHeaderVersion || !bytes.Equal(derivedBody, body) {
			t.Fatalf("derived header version %d (%v), want %d", derived.HeaderVersion, err, wantHeaderVersion)
		}
	}
	if header.APIKey != req.Key() || header.APIVersion != req.GetVersion() || header.CorrelationID != correlationID {
		t.Fatalf("header %+v, want key %d v%d id %d", header, req.Key(), req.GetVersion(), correlationID)
	}
	if wantHeaderVersion > 0 && ((clientID == nil) != (header.ClientID == nil) ||
		(clientID != nil && *clientID != string(header.ClientID))) {
		t.Fatalf("client id %q, want %v", header.ClientID, clientID)
	}
	decoded := kmsg.RequestForKey(req.Key())
	decoded.SetVersion(req.GetVersion())
	if err := decoded.ReadFrom(body); err != nil {
		t.Fatalf("kmsg cannot read the body wire split off: %v", err)
	}
	if !bytes.Equal(decoded.AppendTo(nil), req.AppendTo(nil)) {
		t.Fatalf("body does not round-trip")
	}
	// Vice versa: wire's header encoder plus kmsg's body is kgo's frame.
	rebuilt, at := AppendFrameSize(nil)
	rebuilt = AppendRequestHeader(rebuilt, header)
	rebuilt = req.AppendTo(rebuilt)
	PatchFrameSize(rebuilt, at)
	if !bytes.Equal(rebuilt, framed) {
		t.Fatalf("AppendRequestHeader frame differs from kmsg's:\n wire %x\n kmsg %x", rebuilt, framed)
	}
}

// TestResponseHeaderMatchesKmsg writes response headers v0 and v1 in front
// of kmsg-encoded bodies and checks that the header version chosen matches
// kmsg's flexibility (ApiVersions excepted) and that the body decodes.
func TestResponseHeaderMatchesKmsg(t *testing.T) {
	for _, req := range headerCases() {
		if req.Key() == APIControlledShutdown {
			continue
		}
		resp := req.ResponseKind()
		key, version := req.Key(), req.GetVersion()
		want := int16(0)
		if resp.IsFlexible() && key != APIVersions {
			want = 1
		}
		if got := ResponseHeaderVersion(key, version); got != want {
			t.Errorf("%s v%d: response header v%d, want v%d", APIName(key), version, got, want)
		}
		frame := AppendResponseHeader(nil, 77, want)
		frame = resp.AppendTo(frame)
		id, body, err := ParseResponseHeader(frame, want)
		if err != nil || id != 77 {
			t.Fatalf("%s v%d: id %d, err %v", APIName(key), version, id, err)
		}
		decoded := kmsg.ResponseForKey(key)
		decoded.SetVersion(version)
		if err := decoded.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d: kmsg cannot read body: %v", APIName(key), version, err)
		}
	}
	// A v1 header carrying a tagged field (tag 0, 3 bytes) is skipped.
	frame := []byte{0, 0, 0, 9, 1, 0, 3, 'a', 'b', 'c', 0xee}
	id, body, err := ParseResponseHeader(frame, 1)
	if err != nil || id != 9 || !bytes.Equal(body, []byte{0xee}) {
		t.Fatalf("tagged v1 header: id %d body %x err %v", id, body, err)
	}
}

func TestHeaderTruncationRejected(t *testing.T) {
	for _, req := range headerCases() {
		framed := frameRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("abc")), req, 5)
		frame := framed[4:]
		headerVersion := RequestHeaderVersion(req.Key(), req.GetVersion())
		if req.Key() == APIControlledShutdown && req.GetVersion() == 0 {
			headerVersion = 0
		}
		_, body, err := ParseRequestHeaderVersion(frame, headerVersion)
		if err != nil {
			t.Fatal(err)
		}
		headerSize := len(frame) - len(body)
		for n := 0; n < headerSize; n++ {
			if _, _, err := ParseRequestHeaderVersion(frame[:n], headerVersion); err == nil {
				t.Fatalf("%s: header prefix of %d/%d bytes accepted", APIName(req.Key()), n, headerSize)
			}
		}
		// A frame cut anywhere is io.ErrUnexpectedEOF (or EOF before any byte).
		for n := 1; n < len(framed); n++ {
			frames := FrameReader{R: bytes.NewReader(framed[:n])}
			if _, err := frames.Next(nil); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("frame cut at %d: %v", n, err)
			}
		}
	}
	for _, version := range []int16{0, 1} {
		for _, frame := range [][]byte{{}, {0, 0, 0}, {0, 0, 0, 1, 2}} {
			if _, _, err := ParseResponseHeader(frame, version); err == nil && (version == 1 || len(frame) < 4) {
				t.Fatalf("response header v%d %x accepted", version, frame)
			}
		}
	}
}

func TestFrameReaderLimits(t *testing.T) {
	cases := []struct {
		name  string
		input []byte
		max   int32
		want  error
	}{
		{"negative", []byte{0xff, 0xff, 0xff, 0xff}, 0, ErrFrameNegative},
		{"too large", []byte{0, 0, 1, 1}, 256, ErrFrameTooLarge},
		{"default max", []byte{0x7f, 0xff, 0xff, 0xff}, 0, ErrFrameTooLarge},
	}
	for _, tc := range cases {
		frames := FrameReader{R: bytes.NewReader(tc.input), MaxSize: tc.max}
		if _, err := frames.Next(nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A frame of exactly MaxSize is accepted and reuses dst.
	input := append([]byte{0, 0, 1, 0}, make([]byte, 256)...)
	frames := FrameReader{R: bytes.NewReader(input), MaxSize: 256}
	dst := make([]byte, 0, 512)
	body, err := frames.Next(dst)
	if err != nil || len(body) != 256 || &body[0] != &dst[:1][0] {
		t.Fatalf("max-size frame: %d bytes, err %v", len(body), err)
	}
}

// A large frame is read in growing steps; a peer announcing a large frame
// and sending little makes the reader hold about what arrived, not the claim.
func TestFrameReaderLargeFrames(t *testing.T) {
	payload := make([]byte, 5<<20+123)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	input := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	frames := FrameReader{R: bytes.NewReader(append(input, payload...))}
	frame, err := frames.Next(nil)
	if err != nil || !bytes.Equal(frame, payload) {
		t.Fatalf("large frame: %d bytes, %v", len(frame), err)
	}
	announced := binary.BigEndian.AppendUint32(nil, 90<<20)
	short := append(announced, payload[:100]...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = (&FrameReader{R: bytes.NewReader(short)}).Next(nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short large frame: %v", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 4<<20 {
		t.Fatalf("a 90 MiB claim with 100 bytes sent allocated %d bytes", allocated)
	}
}
