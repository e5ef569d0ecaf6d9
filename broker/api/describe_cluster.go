package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeCluster v0–1 describes the brokers Metadata lists (this broker
// alone, or a cluster's unfenced members), each at its advertised address
// of the listener the request came in on, and this broker as the
// controller. Only the broker endpoint type (1) exists here; asking for
// controllers (2) is UNSUPPORTED_ENDPOINT_TYPE, as on a Kafka broker.
func init() {
	register(wire.APIDescribeCluster, 0, 1, InReader, describeCluster)
}

func describeCluster(_ context.Context, r *Request, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		message := fmt.Sprintf("endpoint type %d: this broker serves only brokers (1)", req.EndpointType)
		resp.ErrorCode, resp.ErrorMessage = 119, &message // UNSUPPORTED_ENDPOINT_TYPE
		return resp
	}
	resp.ClusterID = r.Cluster.ClusterID()
	resp.ControllerID = r.Cluster.ControllerID()
	// The brokers Metadata lists: in a cluster every unfenced one, at its
	// endpoint of the listener the request came in on.
	for _, mb := range r.Cluster.Brokers(r.Listener) {
		broker := kmsg.NewDescribeClusterResponseBroker()
		broker.NodeID, broker.Host, broker.Port, broker.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, broker)
	}
	return resp
}
