package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// Metadata v0–13 describes this broker as the only broker and controller,
// and each requested topic (all topics for a null list, or for an empty
// list at v0) with the broker as leader, sole replica and sole ISR member
// of every partition, at leader epoch 0. Unknown topics are created when
// auto.create.topics.enable is true and the request allows it (always
// before v4). v10+ may name topics by id. The internal topics
// (internal_topics.go) are listed like any other, with IsInternal set, as
// Kafka does; only they are internal.
func init() {
	register(wire.APIMetadata, 0, 13, kmsgHandler(handleMetadata))
}

func handleMetadata(c *connection, req *kmsg.MetadataRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	broker := kmsg.NewMetadataResponseBroker()
	broker.NodeID, broker.Host, broker.Port = b.nodeID, b.advertisedHost, b.advertisedPort
	resp.Brokers = append(resp.Brokers, broker)
	clusterID := b.clusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.nodeID

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		described := b.sortedTopics()
		internal := b.internalTopics
		// Merge the two name-sorted lists, so the answer is sorted.
		for len(described) > 0 || len(internal) > 0 {
			if len(internal) > 0 && (len(described) == 0 || internal[0].name < described[0].name) {
				resp.Topics = append(resp.Topics, b.metadataInternalTopic(&internal[0]))
				internal = internal[1:]
				continue
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(described[0], nil))
			described = described[1:]
		}
		return resp
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, requested := range req.Topics {
		var t *topic
		var err error
		switch {
		case requested.Topic != nil && *requested.Topic != "":
			name := *requested.Topic
			if it := b.internalTopicByName(name); it != nil {
				resp.Topics = append(resp.Topics, b.metadataInternalTopic(it))
				continue
			}
			if err = validateTopicName(name); err == nil {
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
				resp.Topics = append(resp.Topics, b.metadataInternalTopic(it))
				continue
			}
			if t = b.topicByID(requested.TopicID); t == nil {
				failed := b.metadataTopic(nil, errUnknownTopicID)
				failed.TopicID = requested.TopicID
				resp.Topics = append(resp.Topics, failed)
				continue
			}
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(t, nil))
	}
	return resp
}

// metadataTopic describes t, or only err when t is nil.
func (b *Broker) metadataTopic(t *topic, err error) kmsg.MetadataResponseTopic {
	if t == nil {
		mt := kmsg.NewMetadataResponseTopic()
		mt.ErrorCode = errorCode(err)
		return mt
	}
	return b.metadataTopicLedHere(t.name, t.id, int32(len(b.partitionsOf(t))), false)
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
