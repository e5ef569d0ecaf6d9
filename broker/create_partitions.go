package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// CreatePartitions v0–3 grows a topic to a larger partition count; an
// assignment, when given, must place each new partition on this broker
// alone. validate_only checks without creating. A cluster member asks the
// controller instead (Broker.clusterCreatePartitions).
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
		if b.clusterTopics() != nil {
			err := b.clusterCreatePartitions(b.ctx, rt, req.ValidateOnly)
			result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, result)
			continue
		}
		t, err := b.configTopic(rt.Topic)
		if err == nil && rt.Assignment != nil {
			current := int32(len(b.partitionsOf(t)))
			if int32(len(rt.Assignment)) != rt.Count-current {
				err = fmt.Errorf("%w: %d assignments for %d new partitions", errInvalidAssignment, len(rt.Assignment), rt.Count-current)
			}
			for _, assignment := range rt.Assignment {
				if err == nil {
					err = b.checkReplicas(assignment.Replicas)
				}
			}
		}
		if err == nil {
			err = b.addPartitions(t, rt.Count, req.ValidateOnly)
		}
		result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Topics = append(resp.Topics, result)
	}
	return resp
}
