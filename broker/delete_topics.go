package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DeleteTopics v1–6 (v6 may name topics by id) asks the controller to
// delete topics (Broker.clusterDeleteTopic); every replica then closes and
// deletes its partition logs (RemoveTopics). In-flight fetches of a
// deleted partition end with UNKNOWN_TOPIC_OR_PARTITION. The internal
// topics are refused with INVALID_TOPIC_EXCEPTION.
func init() {
	register(wire.APIDeleteTopics, 1, 6, kmsgHandler(handleDeleteTopics))
}

func handleDeleteTopics(c *connection, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, rt := range req.Topics {
			targets = append(targets, target{name: rt.Topic, id: rt.TopicID})
		}
	} else {
		for _, name := range req.TopicNames {
			targets = append(targets, target{name: &name})
		}
	}
	for _, requested := range targets {
		deleted := kmsg.NewDeleteTopicsResponseTopic()
		if err := c.deleteTopicRefusal(requested.name, requested.id); err != nil {
			deleted.Topic, deleted.TopicID, deleted.ErrorCode = requested.name, requested.id, errorCode(err)
			if req.Version >= 5 {
				deleted.ErrorMessage = errorMessage(err)
			}
			resp.Topics = append(resp.Topics, deleted)
			continue
		}
		var name string
		if requested.name != nil {
			name = *requested.name
		}
		name, id, err := b.clusterDeleteTopic(b.ctx, name, requested.id)
		if name != "" {
			deleted.Topic = &name
		}
		deleted.TopicID, deleted.ErrorCode = id, errorCode(err)
		if req.Version >= 5 {
			deleted.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, deleted)
	}
	return resp
}

// deleteTopicRefusal is Kafka's authorization of DeleteTopics
// (authorizationRules): Delete on the topic; a topic named by id also needs
// Describe, and is refused without its name. An id that names no topic
// passes here and is UNKNOWN_TOPIC_ID later.
func (c *connection) deleteTopicRefusal(name *string, id [16]byte) error {
	if c.broker.authorizer == nil {
		return nil
	}
	if name != nil {
		if !c.authorizedTopic(kmsg.ACLOperationDelete, *name) {
			return errTopicAuthorization
		}
		return nil
	}
	b := c.broker
	var resolved string
	if clustered, ok := b.clusterTopicByID(id); ok {
		resolved = clustered
	} else if t := b.topicByID(id); t != nil {
		resolved = t.name
	} else {
		return nil
	}
	if !c.authorizedTopic(kmsg.ACLOperationDescribe, resolved) || !c.authorizedTopic(kmsg.ACLOperationDelete, resolved) {
		return errTopicAuthorization
	}
	return nil
}
