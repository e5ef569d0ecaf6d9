package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DeleteTopics v1–6 (v6 may name topics by id) asks the controller to
// delete topics ([Admin.DeleteTopic]); every replica then closes and
// deletes its partition logs. In-flight fetches of a deleted partition end
// with UNKNOWN_TOPIC_OR_PARTITION. The internal topics are refused with
// INVALID_TOPIC_EXCEPTION.
func init() {
	register(wire.APIDeleteTopics, 1, 6, InReader, deleteTopics)
}

func deleteTopics(_ context.Context, r *Request, req *kmsg.DeleteTopicsRequest) kmsg.Response {
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
		if err := deleteTopicRefusal(r, requested.name, requested.id); err != nil {
			deleted.Topic, deleted.TopicID, deleted.ErrorCode = requested.name, requested.id, errcode.Of(err)
			if req.Version >= 5 {
				deleted.ErrorMessage = errcode.Message(err)
			}
			resp.Topics = append(resp.Topics, deleted)
			continue
		}
		var name string
		if requested.name != nil {
			name = *requested.name
		}
		name, id, err := r.Admin.DeleteTopic(name, requested.id)
		if name != "" {
			deleted.Topic = &name
		}
		deleted.TopicID, deleted.ErrorCode = id, errcode.Of(err)
		if req.Version >= 5 {
			deleted.ErrorMessage = errcode.Message(err)
		}
		resp.Topics = append(resp.Topics, deleted)
	}
	return resp
}

// deleteTopicRefusal is Kafka's authorization of DeleteTopics (the
// broker's authorizationRules): Delete on the topic; a topic named by id
// also needs Describe, and is refused without its name. An id that names
// no topic passes here and is UNKNOWN_TOPIC_ID later.
func deleteTopicRefusal(r *Request, name *string, id [16]byte) error {
	if !r.Auth.Enabled() {
		return nil
	}
	if name != nil {
		if !r.AuthorizedTopic(kmsg.ACLOperationDelete, *name) {
			return errcode.ErrTopicAuthorization
		}
		return nil
	}
	resolved, ok := r.Topics.NameByID(id)
	if !ok {
		return nil
	}
	if !r.AuthorizedTopic(kmsg.ACLOperationDescribe, resolved) || !r.AuthorizedTopic(kmsg.ACLOperationDelete, resolved) {
		return errcode.ErrTopicAuthorization
	}
	return nil
}
