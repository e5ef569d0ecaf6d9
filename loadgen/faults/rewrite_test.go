package faults

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// encodeResponse frames a kmsg response body behind its response header.
func encodeResponse(response kmsg.Response, correlationID int32) []byte {
	version := wire.ResponseHeaderVersion(response.Key(), response.GetVersion())
	return response.AppendTo(wire.AppendResponseHeader(nil, correlationID, version))
}

// decodeResponse parses a frame produced by rewrite into into.
func decodeResponse(t *testing.T, frame []byte, into kmsg.Response, wantCorrelation int32) {
	t.Helper()
	version := wire.ResponseHeaderVersion(into.Key(), into.GetVersion())
	id, body, err := wire.ParseResponseHeader(frame, version)
	if err != nil || id != wantCorrelation {
		t.Fatalf("header: id %d err %v, want %d", id, err, wantCorrelation)
	}
	if err := into.ReadFrom(body); err != nil {
		t.Fatalf("decode rewritten %T v%d: %v", into, into.GetVersion(), err)
	}
}

// assertProxied checks that host:port is the proxy's listener for upstream.
func assertProxied(t *testing.T, p *Proxy, upstream, host string, port int32) {
	t.Helper()
	want, err := p.AddUpstream(upstream)
	if err != nil {
		t.Fatal(err)
	}
	if got := net.JoinHostPort(host, strconv.Itoa(int(port))); got != want {
		t.Fatalf("%s rewritten to %s, want its listener %s", upstream, got, want)
	}
}

// Every version of Metadata, FindCoordinator (single and batched) and
// DescribeCluster comes out pointing at proxy listeners, which are created
// for brokers seen for the first time and learn their node ids.
func TestRewriteAllVersions(t *testing.T) {
	t.Parallel()
	upstream := newFakeUpstream(t)
	p := newProxy(t, upstream.addr(), 1)
	const otherHost = "127.0.0.1"
	brokers := []struct {
		node int32
		port int32
	}{{1, 40001}, {2, 40002}}
	upstreamOf := func(port int32) string { return net.JoinHostPort(otherHost, strconv.Itoa(int(port))) }

	for version := int16(0); version <= (&kmsg.MetadataResponse{}).MaxVersion(); version++ {
		response := kmsg.NewPtrMetadataResponse()
		response.Version = version
		for _, b := range brokers {
			broker := kmsg.NewMetadataResponseBroker()
			broker.NodeID, broker.Host, broker.Port = b.node, otherHost, b.port
			response.Brokers = append(response.Brokers, broker)
		}
		out, err := p.rewrite(wire.APIMetadata, version, encodeResponse(response, 11))
		if err != nil {
			t.Fatalf("Metadata v%d: %v", version, err)
		}
		decoded := kmsg.NewPtrMetadataResponse()
		decoded.Version = version
		decodeResponse(t, out, decoded, 11)
		for i, b := range decoded.Brokers {
			assertProxied(t, p, upstreamOf(brokers[i].port), b.Host, b.Port)
		}
	}

	for version := int16(0); version <= (&kmsg.FindCoordinatorResponse{}).MaxVersion(); version++ {
		response := kmsg.NewPtrFindCoordinatorResponse()
		response.Version = version
		if version < 4 {
			response.NodeID, response.Host, response.Port = 1, otherHost, 40001
		} else {
			found := kmsg.NewFindCoordinatorResponseCoordinator()
			found.Key, found.NodeID, found.Host, found.Port = "group", 2, otherHost, 40002
			failed := kmsg.NewFindCoordinatorResponseCoordinator()
			failed.Key, failed.NodeID, failed.ErrorCode = "missing", -1, 15
			response.Coordinators = append(response.Coordinators, found, failed)
		}
		out, err := p.rewrite(wire.APIFindCoordinator, version, encodeResponse(response, 12))
		if err != nil {
			t.Fatalf("FindCoordinator v%d: %v", version, err)
		}
		decoded := kmsg.NewPtrFindCoordinatorResponse()
		decoded.Version = version
		decodeResponse(t, out, decoded, 12)
		if version < 4 {
			assertProxied(t, p, upstreamOf(40001), decoded.Host, decoded.Port)
			continue
		}
		assertProxied(t, p, upstreamOf(40002), decoded.Coordinators[0].Host, decoded.Coordinators[0].Port)
		if failed := decoded.Coordinators[1]; failed.Host != "" || failed.Port != 0 || failed.ErrorCode != 15 {
			t.Fatalf("FindCoordinator v%d: error coordinator changed: %+v", version, failed)
		}
	}

	for version := int16(0); version <= (&kmsg.DescribeClusterResponse{}).MaxVersion(); version++ {
		response := kmsg.NewPtrDescribeClusterResponse()
		response.Version = version
		broker := kmsg.NewDescribeClusterResponseBroker()
		broker.NodeID, broker.Host, broker.Port = 2, otherHost, 40002
		response.Brokers = append(response.Brokers, broker)
		out, err := p.rewrite(wire.APIDescribeCluster, version, encodeResponse(response, 13))
		if err != nil {
			t.Fatalf("DescribeCluster v%d: %v", version, err)
		}
		decoded := kmsg.NewPtrDescribeClusterResponse()
		decoded.Version = version
		decodeResponse(t, out, decoded, 13)
		assertProxied(t, p, upstreamOf(40002), decoded.Brokers[0].Host, decoded.Brokers[0].Port)
	}

	var nodes []int32
	for _, s := range p.Stats() {
		nodes = append(nodes, s.NodeID)
	}
	if !slices.Equal(nodes, []int32{-1, 1, 2}) {
		t.Fatalf("listener nodes %v, want [-1 1 2] (seed unknown, then the two discovered brokers)", nodes)
	}

	// A truncated response is an error, not a panic or a pass-through.
	if _, err := p.rewrite(wire.APIMetadata, 12, []byte{0, 0, 0, 1, 0, 5}); err == nil {
		t.Fatal("truncated Metadata response rewritten without error")
	}
}

// hasResponse finds acks in every Produce version's body layout.
func TestHasResponseProduceVersions(t *testing.T) {
	t.Parallel()
	transactional := "txn"
	for version := int16(0); version <= (&kmsg.ProduceRequest{}).MaxVersion(); version++ {
		for _, acks := range []int16{0, 1, -1} {
			request := kmsg.NewPtrProduceRequest()
			request.Version, request.Acks, request.TransactionID = version, acks, &transactional
			header := wire.RequestHeader{APIKey: wire.APIProduce, APIVersion: version}
			if got := hasResponse(header, request.AppendTo(nil)); got != (acks != 0) {
				t.Errorf("Produce v%d acks=%d: hasResponse %v", version, acks, got)
			}
		}
	}
	if !hasResponse(wire.RequestHeader{APIKey: wire.APIProduce, APIVersion: 9}, []byte{5}) {
		t.Error("a truncated Produce body must be assumed to expect a response")
	}
}
