package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeCluster v0–1 describes this broker as the whole cluster and its
// controller, at the advertised address of the listener the request came
// in on. Only the broker endpoint type (1) exists here; asking for
// controllers (2) is UNSUPPORTED_ENDPOINT_TYPE, as on a Kafka broker.
func init() {
	register(wire.APIDescribeCluster, 0, 1, kmsgHandler(handleDescribeCluster))
}

func handleDescribeCluster(c *connection, req *kmsg.DescribeClusterRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		message := fmt.Sprintf("endpoint type %d: this broker serves only brokers (1)", req.EndpointType)
		resp.ErrorCode, resp.ErrorMessage = 119, &message // UNSUPPORTED_ENDPOINT_TYPE
		return resp
	}
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.nodeID
	broker := kmsg.NewDescribeClusterResponseBroker()
	broker.NodeID = b.nodeID
	broker.Host, broker.Port = c.advertised()
	resp.Brokers = append(resp.Brokers, broker)
	return resp
}
