package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// CreatePartitions v0–3 grows a topic to a larger partition count through
// the controller (Broker.clusterCreatePartitions); explicit assignments
// are refused. validate_only checks without creating.
func init() {
	register(wire.APICreatePartitions, 0, 3, kmsgHandler(handleCreatePartitions))
}

func handleCreatePartitions(c *connection, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		result := kmsg.NewCreatePartitionsResponseTopic()
		result.Topic = rt.Topic
		if !c.authorizedTopic(kmsg.ACLOperationAlter, rt.Topic) { // authorizationRules
			result.ErrorCode, result.ErrorMessage = errorCode(errTopicAuthorization), errorMessage(errTopicAuthorization)
			resp.Topics = append(resp.Topics, result)
			continue
		}
		err := b.clusterCreatePartitions(b.ctx, rt, req.ValidateOnly)
		result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Topics = append(resp.Topics, result)
	}
	return resp
}
