package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterService is the broker as api.Cluster, the service package api's handlers see.
type clusterService struct{ b *Broker }

// ClusterID is the cluster's id, set by Start.
func (s clusterService) ClusterID() string { return s.b.clusterID }

// ControllerID is this broker's node id: clients are told it is the
// controller.
func (s clusterService) ControllerID() int32 { return s.b.nodeID }

// Brokers is [Broker.metadataBrokers].
func (s clusterService) Brokers(listener string) []kmsg.MetadataResponseBroker {
	return s.b.metadataBrokers(listener)
}

// AllTopics is [Broker.allTopicsMetadata].
func (s clusterService) AllTopics() []kmsg.MetadataResponseTopic { return s.b.allTopicsMetadata() }

// Topic is [Broker.namedTopicMetadata].
func (s clusterService) Topic(name string, allowCreate bool) kmsg.MetadataResponseTopic {
	return s.b.namedTopicMetadata(name, allowCreate)
}

// TopicByID is [Broker.topicMetadataByID].
func (s clusterService) TopicByID(id [16]byte) (mt kmsg.MetadataResponseTopic, name string, found bool) {
	return s.b.topicMetadataByID(id)
}

// AutoCreates reports whether auto.create.topics.enable is on and name is
// neither a topic here nor one of the controller's roles.
func (s clusterService) AutoCreates(name string) bool {
	b := s.b
	return b.config.settings.AutoCreateTopics && b.topicByName(name) == nil && b.topicRoles(name) == nil
}

// Coordinator is [Broker.findCoordinator] for key of keyType (a
// coordinatorKind).
func (s clusterService) Coordinator(ctx context.Context, listener string, keyType int8, key string) (nodeID int32, host string, port int32, err error) {
	answer := s.b.findCoordinator(ctx, listener, coordinatorKind(keyType), key)
	return answer.nodeID, answer.host, answer.port, answer.err
}
