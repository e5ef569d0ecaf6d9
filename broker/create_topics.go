package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// CreateTopics v2–7 creates topics through the controller
// (Broker.clusterCreateTopic) with a partition count (-1: the broker's
// num.partitions), a replication factor (-1: default.replication.factor),
// no explicit replica assignment, and topic configs validated against the
// topic settings table (topicSettings; unknown or invalid ones fail with
// INVALID_CONFIG). validate_only checks without creating. From v5 the
// response carries each topic's configs; v7 its id.
func init() {
	register(wire.APICreateTopics, 2, 7, kmsgHandler(handleCreateTopics))
}

func handleCreateTopics(c *connection, req *kmsg.CreateTopicsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// Authorization (authorizationRules): Create on the Cluster, or else on
	// each topic; the configs are returned only with DescribeConfigs on it.
	createCluster := c.authorizedCluster(kmsg.ACLOperationCreate)
	for _, rt := range req.Topics {
		if seen[rt.Topic] == 1 && !createCluster && !c.authorizedTopic(kmsg.ACLOperationCreate, rt.Topic) {
			refused := kmsg.NewCreateTopicsResponseTopic()
			refused.Topic = rt.Topic
			refused.ErrorCode, refused.ErrorMessage = errorCode(errTopicAuthorization), errorMessage(errTopicAuthorization)
			resp.Topics = append(resp.Topics, refused)
			continue
		}
		if seen[rt.Topic] > 1 {
			failed := kmsg.NewCreateTopicsResponseTopic()
			failed.Topic = rt.Topic
			err := fmt.Errorf("%w: topic %s appears more than once", errInvalidRequest, rt.Topic)
			failed.ErrorCode, failed.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, failed)
			continue
		}
		created, err := b.clusterCreateTopic(b.ctx, rt, req.ValidateOnly)
		created.ErrorCode, created.ErrorMessage = errorCode(err), errorMessage(err)
		if err == nil && !c.authorizedTopic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
			// As Kafka: a creator without DescribeConfigs on the topic
			// learns that it was created, not its configs or shape.
			created.ConfigErrorCode = errorCode(errTopicAuthorization)
			created.Configs, created.NumPartitions, created.ReplicationFactor = nil, -1, -1
		}
		resp.Topics = append(resp.Topics, created)
	}
	return resp
}
