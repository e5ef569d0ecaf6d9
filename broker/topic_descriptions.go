package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic and broker descriptions: what Metadata tells a client of each
// topic (its partitions' leaders, leader epochs, replicas and ISR) and of
// the brokers, built from the controller's roles as last applied
// ([Broker.ApplyPartitionRoles]) and the local topics. The Metadata handler
// (package api, through [clusterService]) authorizes and picks the topics;
// DescribeCluster lists the same brokers.

// allTopicsMetadata describes every topic of the cluster, sorted by name
// (clusterMetadataTopics).
func (b *Broker) allTopicsMetadata() []kmsg.MetadataResponseTopic {
	return b.clusterMetadataTopics()
}

// namedTopicMetadata describes the topic a Metadata request names,
// auto-creating it when allowCreate and auto.create.topics.enable allow
// (through the controller when topics are the cluster's); a topic that
// cannot be described is its error only, with its name.
func (b *Broker) namedTopicMetadata(name string, allowCreate bool) kmsg.MetadataResponseTopic {
	if roles := b.topicRoles(name); roles != nil && b.topicByName(name) == nil {
		// Replicated elsewhere, no replica here.
		return metadataTopicFromRoles(name, roles[0].TopicID, roles)
	}
	if err := validateTopicName(name); err != nil {
		failed := b.metadataTopic(nil, err)
		failed.Topic = &name
		return failed
	}
	return b.clusterMetadataTopic(name, allowCreate)
}

// topicMetadataByID describes the topic of that id. found is false for
// an unknown id (UNKNOWN_TOPIC_ID, with the id only); else name is the
// topic's, for the caller's authorization.
func (b *Broker) topicMetadataByID(id [16]byte) (mt kmsg.MetadataResponseTopic, name string, found bool) {
	if name, ok := b.clusterTopicByID(id); ok {
		return b.clusterMetadataTopic(name, false), name, true
	}
	t := b.topicByID(id)
	if t == nil {
		failed := b.metadataTopic(nil, errUnknownTopicID)
		failed.TopicID = id
		return failed, "", false
	}
	return b.metadataTopic(t, nil), t.name, true
}

// metadataTopic describes t, or only err when t is nil.
func (b *Broker) metadataTopic(t *topic, err error) kmsg.MetadataResponseTopic {
	if t == nil {
		mt := kmsg.NewMetadataResponseTopic()
		mt.ErrorCode = errorCode(err)
		return mt
	}
	if roles := b.topicRoles(t.name); roles != nil {
		return metadataTopicFromRoles(t.name, t.id, roles)
	}
	return b.metadataTopicLedHere(t.name, t.id, int32(len(b.partitionsOf(t))), false)
}

// metadataBrokers lists the cluster's unfenced brokers as last applied
// (by ApplyPartitionRoles), or this broker alone at the advertised address of
// the listener named listener, the one the request came in on (as Kafka
// answers per listener name; see [Broker.endpointFor]).
func (b *Broker) metadataBrokers(listener string) []kmsg.MetadataResponseBroker {
	self := kmsg.NewMetadataResponseBroker()
	self.NodeID = b.nodeID
	self.Host, self.Port = b.advertised(listener)
	view := b.replication.view.Load()
	if view == nil {
		return []kmsg.MetadataResponseBroker{self}
	}
	var brokers []kmsg.MetadataResponseBroker
	for _, cb := range view.brokers {
		if cb.Fenced && cb.ID != b.nodeID {
			continue
		}
		host, port, ok := b.endpointFor(listener, cb)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = cb.ID, host, port
		if cb.Rack != "" {
			mb.Rack = kmsg.StringPtr(cb.Rack)
		}
		brokers = append(brokers, mb)
	}
	return brokers
}

// metadataTopicFromRoles describes a replicated topic: each partition's
// leader (LEADER_NOT_AVAILABLE when none), leader epoch, replicas and ISR.
func metadataTopicFromRoles(name string, id [16]byte, roles []PartitionRole) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = id
	mt.IsInternal = isInternalTopicName(name)
	for _, role := range roles {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = role.Partition
		mp.Leader, mp.LeaderEpoch = role.Leader, role.LeaderEpoch
		if role.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mp.Replicas = append([]int32{}, role.Replicas...)
		mp.ISR = append([]int32{}, role.ISR...)
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// metadataTopicLedHere describes a topic whose partitions 0..partitions-1
// this broker leads, alone in their replica set and ISR.
func (b *Broker) metadataTopicLedHere(name string, id [16]byte, partitions int32, internal bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = id
	mt.IsInternal = internal
	for index := range partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = index
		mp.Leader = b.nodeID
		mp.LeaderEpoch = leaderEpoch
		mp.Replicas = []int32{b.nodeID}
		mp.ISR = []int32{b.nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
