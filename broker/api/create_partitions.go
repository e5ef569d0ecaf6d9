package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// CreatePartitions v0–3 grows a topic to a larger partition count through
// the controller ([Admin.CreatePartitions]); explicit assignments are
// refused. validate_only checks without creating.
func init() {
	register(wire.APICreatePartitions, 0, 3, InReader, createPartitions)
}

func createPartitions(_ context.Context, r *Request, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		result := kmsg.NewCreatePartitionsResponseTopic()
		result.Topic = rt.Topic
		if !r.AuthorizedTopic(kmsg.ACLOperationAlter, rt.Topic) { // the broker's authorizationRules
			result.ErrorCode, result.ErrorMessage = errcode.Of(errcode.ErrTopicAuthorization), errcode.Message(errcode.ErrTopicAuthorization)
			resp.Topics = append(resp.Topics, result)
			continue
		}
		err := r.Admin.CreatePartitions(rt, req.ValidateOnly)
		result.ErrorCode, result.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Topics = append(resp.Topics, result)
	}
	return resp
}
