package api

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// Metadata v0–13 describes the cluster's brokers and each requested topic
// (all topics for a null list, or for an empty list at v0): its
// partitions' leaders, epochs, replicas and ISR as the controller's roles
// last said ([Cluster]). Unknown topics are created through the controller
// when auto.create.topics.enable is true and the request allows it
// (always before v4). v10+ may name topics by id. The internal topics,
// once created, are listed like any other, with IsInternal set, as Kafka
// does; only they are internal.
//
// With an authorizer ([Authorizer.Enabled]), as Kafka: an all-topics
// request leaves out the topics the principal may not Describe; a named
// one it may not Describe is TOPIC_AUTHORIZATION_FAILED (and not looked
// up); a topic that would be auto-created needs Create on the Cluster or
// the topic, else TOPIC_AUTHORIZATION_FAILED; a topic named by id that
// may not be described is refused with the id only.
func init() {
	register(wire.APIMetadata, 0, 13, InReader, metadata)
}

func metadata(_ context.Context, r *Request, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = r.Cluster.Brokers(r.Listener)
	clusterID := r.Cluster.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = r.Cluster.ControllerID()

	defer includeAuthorizedOperations(r, req, resp)
	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		resp.Topics = describableTopics(r, r.Cluster.AllTopics())
		return resp
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, requested := range req.Topics {
		if requested.Topic != nil && *requested.Topic != "" {
			name := *requested.Topic
			if refused, ok := metadataRefusal(r, name, allowCreate); !ok {
				resp.Topics = append(resp.Topics, refused)
				continue
			}
			resp.Topics = append(resp.Topics, r.Cluster.Topic(name, allowCreate))
			continue
		}
		mt, name, found := r.Cluster.TopicByID(requested.TopicID)
		if found {
			mt = describableByID(r, mt, name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// includeAuthorizedOperations fills in the authorized operations the
// request asked for (KIP-430): each described topic's (v8+), the cluster's
// (v8 to v10, the versions that carry it); the others stay
// authorizedOperationsOmitted.
func includeAuthorizedOperations(r *Request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	resp.AuthorizedOperations = authorizedOperationsOmitted
	if req.IncludeClusterAuthorizedOperations && req.Version >= 8 && req.Version <= 10 {
		resp.AuthorizedOperations = authorizedOperations(r, kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterOperations)
	}
	for i := range resp.Topics {
		topic := &resp.Topics[i]
		topic.AuthorizedOperations = authorizedOperationsOmitted
		if req.IncludeTopicAuthorizedOperations && req.Version >= 8 && topic.ErrorCode == 0 && topic.Topic != nil {
			topic.AuthorizedOperations = authorizedOperations(r, kmsg.ACLResourceTypeTopic, *topic.Topic, topicOperations)
		}
	}
}

// describableTopics keeps the topics the principal may Describe: an
// all-topics Metadata request does not disclose the others, as in Kafka.
func describableTopics(r *Request, topics []kmsg.MetadataResponseTopic) []kmsg.MetadataResponseTopic {
	if !r.Auth.Enabled() {
		return topics
	}
	return slices.DeleteFunc(topics, func(t kmsg.MetadataResponseTopic) bool {
		return t.Topic == nil || !r.AuthorizedTopic(kmsg.ACLOperationDescribe, *t.Topic)
	})
}

// metadataRefusal is Kafka's authorization of a topic Metadata names:
// without Describe it is TOPIC_AUTHORIZATION_FAILED (and not looked up,
// so its existence is not disclosed); a topic that would be auto-created
// needs Create on the Cluster or the topic, else it is
// TOPIC_AUTHORIZATION_FAILED too. ok is false when refused.
func metadataRefusal(r *Request, name string, allowCreate bool) (refused kmsg.MetadataResponseTopic, ok bool) {
	refuse := func() (kmsg.MetadataResponseTopic, bool) {
		mt := topicAuthorizationFailed()
		mt.Topic = &name
		return mt, false
	}
	if !r.AuthorizedTopic(kmsg.ACLOperationDescribe, name) {
		return refuse()
	}
	if allowCreate && r.Cluster.AutoCreates(name) && !r.MayCreateTopic(name) {
		return refuse()
	}
	return kmsg.MetadataResponseTopic{}, true
}

// describableByID is mt (a topic Metadata named by id) when the principal
// may Describe it, else TOPIC_AUTHORIZATION_FAILED with the id only
// (Kafka: topic ids are not sensitive, names are).
func describableByID(r *Request, mt kmsg.MetadataResponseTopic, name string) kmsg.MetadataResponseTopic {
	if r.AuthorizedTopic(kmsg.ACLOperationDescribe, name) {
		return mt
	}
	refused := topicAuthorizationFailed()
	refused.TopicID = mt.TopicID
	return refused
}

// topicAuthorizationFailed is a Metadata topic that is
// TOPIC_AUTHORIZATION_FAILED only, for the caller to name.
func topicAuthorizationFailed() kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.ErrorCode = errcode.Of(errcode.ErrTopicAuthorization)
	return mt
}
