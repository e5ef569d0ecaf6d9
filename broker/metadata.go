package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// Metadata v0–13 describes this broker as the only broker and controller
// (with replication on: the cluster's brokers, and each replicated
// topic's leaders, epochs, replicas and ISR as the controller's roles last
// said, Broker.ApplyPartitionRoles; the rest as below), and each requested
// topic (all topics for a null list, or for an empty list at v0) with the
// broker as leader, sole replica and sole ISR member of every partition, at
// leader epoch 0. Unknown topics are created when auto.create.topics.enable
// is true and the request allows it (always before v4). v10+ may name
// topics by id. The internal topics (Broker.internalTopics) are listed like
// any other, with IsInternal set, as Kafka does; only they are internal. A
// cluster member whose topics are the controller's
// (ReplicationConfig.Topics; clusterMetadataTopics) lists every topic of
// the roles and auto-creates through the controller.
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
	if allTopics && b.clusterTopics() != nil {
		resp.Topics = c.describableTopics(b.clusterMetadataTopics())
		return resp
	}
	if allTopics {
		described := b.describedTopics()
		internal := b.internalTopics
		// Merge the two name-sorted lists, so the answer is sorted.
		for len(described) > 0 || len(internal) > 0 {
			if len(internal) > 0 && (len(described) == 0 || internal[0].name < *described[0].Topic) {
				resp.Topics = append(resp.Topics, b.metadataInternalTopic(&internal[0]))
				internal = internal[1:]
				continue
			}
			resp.Topics = append(resp.Topics, described[0])
			described = described[1:]
		}
		resp.Topics = c.describableTopics(resp.Topics)
		return resp
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, requested := range req.Topics {
		var t *topic
		var err error
		switch {
		case requested.Topic != nil && *requested.Topic != "":
			name := *requested.Topic
			if refused, ok := c.metadataRefusal(name, allowCreate); !ok {
				resp.Topics = append(resp.Topics, refused)
				continue
			}
			if it := b.internalTopicByName(name); it != nil {
				resp.Topics = append(resp.Topics, b.metadataInternalTopic(it))
				continue
			}
			if roles := b.topicRoles(name); roles != nil && b.topicByName(name) == nil {
				// Replicated elsewhere, no replica here.
				resp.Topics = append(resp.Topics, metadataTopicFromRoles(name, roles[0].TopicID, roles))
				continue
			}
			if err = validateTopicName(name); err == nil && b.clusterTopics() != nil {
				resp.Topics = append(resp.Topics, b.clusterMetadataTopic(name, allowCreate))
				continue
			}
			if err == nil {
				t, err = b.autoCreateTopic(name, allowCreate)
			}
			if err != nil {
				failed := b.metadataTopic(nil, err)
				failed.Topic = &name
				resp.Topics = append(resp.Topics, failed)
				continue
			}
		default:
			if it := b.internalTopicByID(requested.TopicID); it != nil {
				resp.Topics = append(resp.Topics, c.describableByID(b.metadataInternalTopic(it), it.name))
				continue
			}
			if name, ok := b.clusterTopicByIDIfClustered(requested.TopicID); ok {
				resp.Topics = append(resp.Topics, c.describableByID(b.clusterMetadataTopic(name, false), name))
				continue
			}
			if t = b.topicByID(requested.TopicID); t == nil {
				failed := b.metadataTopic(nil, errUnknownTopicID)
				failed.TopicID = requested.TopicID
				resp.Topics = append(resp.Topics, failed)
				continue
			}
			resp.Topics = append(resp.Topics, c.describableByID(b.metadataTopic(t, nil), t.name))
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(t, nil))
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
	exists := b.topicByName(name) != nil || b.internalTopicByName(name) != nil || b.topicRoles(name) != nil
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

// describedTopics describes every topic, sorted by name: the local ones
// and, with replication on, those of the controller's roles this broker
// holds no replica of.
func (b *Broker) describedTopics() []kmsg.MetadataResponseTopic {
	local := b.sortedTopics()
	out := make([]kmsg.MetadataResponseTopic, 0, len(local))
	for _, t := range local {
		out = append(out, b.metadataTopic(t, nil))
	}
	if b.replication == nil {
		return out
	}
	view := b.replication.view.Load()
	if view == nil {
		return out
	}
	added := false
	for name, roles := range view.topics {
		if b.topicByName(name) == nil && len(roles) > 0 {
			out = append(out, metadataTopicFromRoles(name, roles[0].TopicID, roles))
			added = true
		}
	}
	if added {
		slices.SortFunc(out, func(x, y kmsg.MetadataResponseTopic) int { return compareStrings(*x.Topic, *y.Topic) })
	}
	return out
}

// metadataBrokers lists the cluster's unfenced brokers as last applied
// (by ApplyPartitionRoles), or this broker alone at the advertised address of
// the listener c came in on (as Kafka answers per listener name).
func (b *Broker) metadataBrokers(c *connection) []kmsg.MetadataResponseBroker {
	self := kmsg.NewMetadataResponseBroker()
	self.NodeID = b.nodeID
	self.Host, self.Port = c.advertised()
	if b.replication == nil {
		return []kmsg.MetadataResponseBroker{self}
	}
	view := b.replication.view.Load()
	if view == nil {
		return []kmsg.MetadataResponseBroker{self}
	}
	var brokers []kmsg.MetadataResponseBroker
	for _, cb := range view.brokers {
		if cb.Fenced && cb.ID != b.nodeID {
			continue
		}
		host, port, ok := b.endpointFor(c, cb)
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

// topicRoles returns the roles of a topic's partitions as last applied,
// nil when it has none (replication off, or a topic only this broker has).
func (b *Broker) topicRoles(name string) []PartitionRole {
	if b.replication == nil {
		return nil
	}
	view := b.replication.view.Load()
	if view == nil {
		return nil
	}
	return view.topics[name]
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

// metadataInternalTopic describes an internal topic.
func (b *Broker) metadataInternalTopic(it *internalTopic) kmsg.MetadataResponseTopic {
	return b.metadataTopicLedHere(it.name, it.id, it.partitions, true)
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
