package faults

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// rewritesAddresses reports whether responses of the API carry broker
// addresses that must be replaced by proxy addresses.
func rewritesAddresses(apiKey int16) bool {
	return apiKey == wire.APIMetadata || apiKey == wire.APIFindCoordinator || apiKey == wire.APIDescribeCluster
}

// rewrite decodes a Metadata, FindCoordinator or DescribeCluster response,
// replaces every broker address with the proxy listener for it (creating
// listeners for brokers seen for the first time) and re-encodes it. It
// runs on response pumps, concurrently; listenerFor does the locking.
func (p *Proxy) rewrite(apiKey, version int16, frame []byte) ([]byte, error) {
	headerVersion := wire.ResponseHeaderVersion(apiKey, version)
	correlationID, body, err := wire.ParseResponseHeader(frame, headerVersion)
	if err != nil {
		return nil, fmt.Errorf("rewrite %s v%d: %w", wire.APIName(apiKey), version, err)
	}
	var response kmsg.Response
	switch apiKey {
	case wire.APIMetadata:
		response = kmsg.NewPtrMetadataResponse()
	case wire.APIFindCoordinator:
		response = kmsg.NewPtrFindCoordinatorResponse()
	case wire.APIDescribeCluster:
		response = kmsg.NewPtrDescribeClusterResponse()
	default:
		return frame, nil
	}
	response.SetVersion(version)
	if err := response.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("rewrite %s v%d: decode: %w", wire.APIName(apiKey), version, err)
	}
	if err := p.rewriteBrokers(response); err != nil {
		return nil, fmt.Errorf("rewrite %s v%d: %w", wire.APIName(apiKey), version, err)
	}
	out := wire.AppendResponseHeader(make([]byte, 0, len(frame)+64), correlationID, headerVersion)
	return response.AppendTo(out), nil
}

// rewriteBrokers replaces each broker address in a decoded response.
func (p *Proxy) rewriteBrokers(response kmsg.Response) error {
	switch r := response.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := p.replaceAddress(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := p.replaceAddress(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
	case *kmsg.FindCoordinatorResponse:
		// v0-v3 answer one key at the top level; v4+ a list. An error
		// answer carries node -1 and no address, which is left alone.
		if r.Version < 4 {
			if r.ErrorCode == 0 && r.NodeID >= 0 {
				return p.replaceAddress(r.NodeID, &r.Host, &r.Port)
			}
			return nil
		}
		for i := range r.Coordinators {
			c := &r.Coordinators[i]
			if c.ErrorCode != 0 || c.NodeID < 0 {
				continue
			}
			if err := p.replaceAddress(c.NodeID, &c.Host, &c.Port); err != nil {
				return err
			}
		}
	}
	return nil
}

// replaceAddress points host:port at the proxy's listener for it and
// remembers the node id of that listener (rules may match on it).
func (p *Proxy) replaceAddress(nodeID int32, host *string, port *int32) error {
	listener, err := p.listenerFor(*host, *port)
	if err != nil {
		return err
	}
	listener.nodeID.Store(nodeID)
	*host, *port = listener.host, listener.port
	return nil
}
