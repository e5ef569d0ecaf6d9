package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// rawConnection is a bare TCP client that speaks frames by hand.
type rawConnection struct {
	t    *testing.T
	conn net.Conn
}

func dialRaw(t *testing.T, b *Broker) *rawConnection {
	t.Helper()
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConnection{t: t, conn: conn}
}

func (r *rawConnection) write(b []byte) {
	r.t.Helper()
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// request sends a kmsg request at version with correlation id 7.
func (r *rawConnection) request(req kmsg.Request, version int16) {
	r.t.Helper()
	req.SetVersion(version)
	header := wire.RequestHeader{APIKey: req.Key(), APIVersion: version, CorrelationID: 7,
		ClientID: []byte("raw"), HeaderVersion: wire.RequestHeaderVersion(req.Key(), version)}
	frame, at := wire.AppendFrameSize(nil)
	frame = wire.AppendRequestHeader(frame, header)
	frame = req.AppendTo(frame)
	wire.PatchFrameSize(frame, at)
	r.write(frame)
}

// response reads one response frame into resp (of the given version).
func (r *rawConnection) response(resp kmsg.Response, version int16) {
	r.t.Helper()
	reader := wire.FrameReader{R: r.conn}
	frame, err := reader.Next(nil)
	if err != nil {
		r.t.Fatalf("read response: %v", err)
	}
	correlation, body, err := wire.ParseResponseHeader(frame, wire.ResponseHeaderVersion(resp.Key(), version))
	if err != nil || correlation != 7 {
		r.t.Fatalf("response header: correlation %d, %v", correlation, err)
	}
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decode %T v%d: %v", resp, version, err)
	}
}

// expectClosed waits for the broker to close the connection.
func (r *rawConnection) expectClosed() {
	r.t.Helper()
	buf := make([]byte, 1)
	n, err := r.conn.Read(buf)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		r.t.Fatalf("connection still open after bad input")
	}
	if err == nil {
		r.t.Fatalf("read %d bytes, want the connection closed", n)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		r.t.Fatalf("read: %v, want EOF or reset", err)
	}
}

func isReset(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "read"
}

// expectWorking checks a new connection still gets answers.
func expectWorking(t *testing.T, b *Broker) {
	t.Helper()
	r := dialRaw(t, b)
	r.request(kmsg.NewPtrMetadataRequest(), 12)
	resp := kmsg.NewPtrMetadataResponse()
	r.response(resp, 12)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
		t.Fatalf("metadata after bad input: brokers %+v", resp.Brokers)
	}
}

func frameOf(body []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(len(body)))
}

// TestBadInputClosesOnlyThatConnection sends each kind of input Kafka has
// no error response for; the broker closes that connection and keeps
// serving others.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"socket.request.max.bytes": "1048576"})
	unknownKey := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: 999, APIVersion: 0, CorrelationID: 7, HeaderVersion: 1})
	unsupportedMetadata := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.APIMetadata, APIVersion: 99, CorrelationID: 7, HeaderVersion: 1})
	truncatedMetadata := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.APIMetadata, APIVersion: 4, CorrelationID: 7, HeaderVersion: 1})
	truncatedMetadata = append(truncatedMetadata, 0, 0, 0, 5) // 5 topics, none present
	cases := map[string][]byte{
		"oversized frame":         binary.BigEndian.AppendUint32(nil, 1048577),
		"negative frame size":     {0xff, 0xff, 0xff, 0xf0},
		"garbage bytes":           []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"frame shorter than head": append(frameOf([]byte{0, 3}), 0, 3),
		"unknown API key":         append(frameOf(unknownKey), unknownKey...),
		"unsupported version":     append(frameOf(unsupportedMetadata), unsupportedMetadata...),
		"malformed body":          append(frameOf(truncatedMetadata), truncatedMetadata...),
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, b)
			r.write(input)
			r.expectClosed()
			expectWorking(t, b)
		})
	}
	t.Run("truncated frame", func(t *testing.T) {
		r := dialRaw(t, b)
		r.write(append(binary.BigEndian.AppendUint32(nil, 100), make([]byte, 10)...))
		r.conn.(*net.TCPConn).CloseWrite()
		r.expectClosed()
		expectWorking(t, b)
	})
}

// TestApiVersionsUnknownVersion: an ApiVersions version we do not know is
// answered at v0 with UNSUPPORTED_VERSION and our ranges (as Kafka does).
func TestApiVersionsUnknownVersion(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	r := dialRaw(t, b)
	r.request(kmsg.NewPtrApiVersionsRequest(), 9)
	resp := kmsg.NewPtrApiVersionsResponse()
	r.response(resp, 0)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	advertised := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for key, want := range map[int16][2]int16{wire.APIVersions: {0, 4}, wire.APIInitProducerID: {0, 5}, wire.APIDescribeProducers: {0, 0}} {
		if got, ok := advertised[key]; !ok || got != want {
			t.Fatalf("%s: advertised %v (%v), want %v", wire.APIName(key), got, ok, want)
		}
	}
	// The transaction APIs, with the versions clients send
	// (KAFKA-VERSIONS.md).
	for key, want := range map[int16][2]int16{wire.APIAddPartitionsToTxn: {0, 5}, wire.APIAddOffsetsToTxn: {0, 4},
		wire.APIEndTxn: {0, 5}, wire.APITxnOffsetCommit: {0, 6}, wire.APIWriteTxnMarkers: {0, 1},
		wire.APIDescribeTransactions: {0, 0}, wire.APIListTransactions: {0, 1}} {
		if got, ok := advertised[key]; !ok || got != want {
			t.Fatalf("%s: advertised %v (%v), want %v", wire.APIName(key), got, ok, want)
		}
	}
	// The same connection goes on with a version it now knows.
	r.request(kmsg.NewPtrApiVersionsRequest(), 3)
	resp = kmsg.NewPtrApiVersionsResponse()
	r.response(resp, 3)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) < 10 {
		t.Fatalf("ApiVersions v3: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// TestProduceCorruptCRC: a batch whose CRC does not match gets
// CORRUPT_MESSAGE and nothing is written; a good batch on the same
// connection afterwards is appended at offset 0.
func TestProduceCorruptCRC(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	batch, err := wire.BuildBatch(wire.PlainBatchOptions(), []wire.BuilderRecord{{TimestampMillis: 1, Value: []byte("payload")}})
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), batch...)
	corrupt[len(corrupt)-2] ^= 0xff
	r := dialRaw(t, b)
	for i, records := range [][]byte{corrupt, batch} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "crc"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.request(req, 9)
		resp := kmsg.NewPtrProduceResponse()
		r.response(resp, 9)
		got := resp.Topics[0].Partitions[0]
		switch i {
		case 0:
			if got.ErrorCode != kerr.CorruptMessage.Code {
				t.Fatalf("corrupt batch: error %d, want CORRUPT_MESSAGE", got.ErrorCode)
			}
		case 1:
			if got.ErrorCode != 0 || got.BaseOffset != 0 {
				t.Fatalf("good batch: error %d base offset %d, want 0 at 0", got.ErrorCode, got.BaseOffset)
			}
		}
	}
	expectWorking(t, b)
}

// An acks=0 Produce that fails closes the connection, as Kafka does: the
// producer reads no answer, so a closed connection is how it learns (it
// refreshes its metadata and reconnects). One that succeeds leaves the
// connection open and unanswered.
func TestAcksZeroProduceFailureClosesConnection(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"auto.create.topics.enable": "false"})
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, "acks0", 1, nil)
	ok := dialRaw(t, b)
	ok.produceAcksZero("acks0", 0, plainBatch(t, "fine", 2))
	ok.metadataWorks() // still open, and the acks=0 produce was not answered
	refused := dialRaw(t, b)
	refused.produceAcksZero("acks0", 7, plainBatch(t, "no-such-partition", 2))
	refused.expectClosed()
}

// produceAcksZero sends an acks=0 Produce v9 of records to one partition.
func (r *rawConnection) produceAcksZero(topic string, partition int32, records []byte) {
	r.t.Helper()
	r.request(produceRequest(topic, partition, records, 0), 9)
}
