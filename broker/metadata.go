package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// Metadata v0–13 describes the cluster's brokers and each requested topic
// (all topics for a null list, or for an empty list at v0): its
// partitions' leaders, epochs, replicas and ISR as the controller's roles
// last said (Broker.ApplyPartitionRoles; clusterMetadataTopics). Unknown
// topics are created through the controller when auto.create.topics.enable
// is true and the request allows it (always before v4). v10+ may name
// topics by id. The internal topics, once created, are listed like any
// other, with IsInternal set, as Kafka does; only they are internal.
//
// With an authorizer (Broker.authorizer), as Kafka: an all-topics request
// leaves out the topics the principal may not Describe; a named one it
// may not Describe is TOPIC_AUTHORIZATION_FAILED (and not looked up); a
// topic that would be auto-created needs Create on the Cluster or the
// topic, else TOPIC_AUTHORIZATION_FAILED; a topic named by id that may
// not be described is refused with the id only.
func init() {
	register(wire.APIMetadata, 0, 13, kmsgHandler(handleMetadata))
}

func handleMetadata(c *connection, req *kmsg.MetadataRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = b.metadataBrokers(c)
	clusterID := b.clusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.nodeID

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		resp.Topics = c.describableTopics(b.allTopicsMetadata())
		return resp
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, requested := range req.Topics {
		if requested.Topic != nil && *requested.Topic != "" {
			name := *requested.Topic
			if refused, ok := c.metadataRefusal(name, allowCreate); !ok {
				resp.Topics = append(resp.Topics, refused)
				continue
			}
			resp.Topics = append(resp.Topics, b.namedTopicMetadata(name, allowCreate))
			continue
		}
		mt, name, found := b.topicMetadataByID(requested.TopicID)
		if found {
			mt = c.describableByID(mt, name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// describableTopics keeps the topics the principal may Describe: an
// all-topics Metadata request does not disclose the others, as in Kafka.
func (c *connection) describableTopics(topics []kmsg.MetadataResponseTopic) []kmsg.MetadataResponseTopic {
	if c.broker.authorizer == nil {
		return topics
	}
	return slices.DeleteFunc(topics, func(t kmsg.MetadataResponseTopic) bool {
		return t.Topic == nil || !c.authorizedTopic(kmsg.ACLOperationDescribe, *t.Topic)
	})
}

// metadataRefusal is Kafka's authorization of a topic Metadata names:
// without Describe it is TOPIC_AUTHORIZATION_FAILED (and not looked up,
// so its existence is not disclosed); a topic that would be auto-created
// needs Create on the Cluster or the topic, else it is
// TOPIC_AUTHORIZATION_FAILED too. ok is false when refused.
func (c *connection) metadataRefusal(name string, allowCreate bool) (refused kmsg.MetadataResponseTopic, ok bool) {
	refuse := func() (kmsg.MetadataResponseTopic, bool) {
		mt := c.broker.metadataTopic(nil, errTopicAuthorization)
		mt.Topic = &name
		return mt, false
	}
	if !c.authorizedTopic(kmsg.ACLOperationDescribe, name) {
		return refuse()
	}
	b := c.broker
	exists := b.topicByName(name) != nil || b.topicRoles(name) != nil
	if allowCreate && b.config.settings.AutoCreateTopics && !exists && !c.mayCreateTopic(name) {
		return refuse()
	}
	return kmsg.MetadataResponseTopic{}, true
}

// describableByID is mt (a topic Metadata named by id) when the principal
// may Describe it, else TOPIC_AUTHORIZATION_FAILED with the id only
// (Kafka: topic ids are not sensitive, names are).
func (c *connection) describableByID(mt kmsg.MetadataResponseTopic, name string) kmsg.MetadataResponseTopic {
	if c.authorizedTopic(kmsg.ACLOperationDescribe, name) {
		return mt
	}
	refused := c.broker.metadataTopic(nil, errTopicAuthorization)
	refused.TopicID = mt.TopicID
	return refused
}
