package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// CreateTopics v2–7 creates topics through the controller
// ([Admin.CreateTopic]) with a partition count (-1: the broker's
// num.partitions), a replication factor (-1: default.replication.factor),
// no explicit replica assignment, and topic configs validated against the
// broker's topic settings table (unknown or invalid ones fail with
// INVALID_CONFIG). validate_only checks without creating. From v5 the
// response carries each topic's configs; v7 its id.
func init() {
	register(wire.APICreateTopics, 2, 7, InReader, createTopics)
}

func createTopics(_ context.Context, r *Request, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// Authorization (the broker's authorizationRules): Create on the
	// Cluster, or else on each topic; the configs are returned only with
	// DescribeConfigs on it.
	createCluster := r.AuthorizedCluster(kmsg.ACLOperationCreate)
	for _, rt := range req.Topics {
		if seen[rt.Topic] == 1 && !createCluster && !r.AuthorizedTopic(kmsg.ACLOperationCreate, rt.Topic) {
			refused := kmsg.NewCreateTopicsResponseTopic()
			refused.Topic = rt.Topic
			refused.ErrorCode, refused.ErrorMessage = errcode.Of(errcode.ErrTopicAuthorization), errcode.Message(errcode.ErrTopicAuthorization)
			resp.Topics = append(resp.Topics, refused)
			continue
		}
		if seen[rt.Topic] > 1 {
			failed := kmsg.NewCreateTopicsResponseTopic()
			failed.Topic = rt.Topic
			err := fmt.Errorf("%w: topic %s appears more than once", errcode.ErrInvalidRequest, rt.Topic)
			failed.ErrorCode, failed.ErrorMessage = errcode.Of(err), errcode.Message(err)
			resp.Topics = append(resp.Topics, failed)
			continue
		}
		created, err := r.Admin.CreateTopic(rt, req.ValidateOnly)
		created.ErrorCode, created.ErrorMessage = errcode.Of(err), errcode.Message(err)
		if err == nil && !r.AuthorizedTopic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
			// As Kafka: a creator without DescribeConfigs on the topic
			// learns that it was created, not its configs or shape.
			created.ConfigErrorCode = errcode.Of(errcode.ErrTopicAuthorization)
			created.Configs, created.NumPartitions, created.ReplicationFactor = nil, -1, -1
		}
		resp.Topics = append(resp.Topics, created)
	}
	return resp
}
