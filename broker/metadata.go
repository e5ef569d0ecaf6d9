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
// before v4). v10+ may name topics by id.
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
		for _, t := range b.sortedTopics() {
			resp.Topics = append(resp.Topics, b.metadataTopic(t, nil))
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
	mt := kmsg.NewMetadataResponseTopic()
	if t == nil {
		mt.ErrorCode = errorCode(err)
		return mt
	}
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = len(name) > 2 && name[:2] == "__"
	for _, p := range b.partitionsOf(t) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = b.nodeID
		mp.LeaderEpoch = leaderEpoch
		mp.Replicas = []int32{b.nodeID}
		mp.ISR = []int32{b.nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
