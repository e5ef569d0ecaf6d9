package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// IncrementalAlterConfigs v0–1 changes individual topic configs
// ([Admin.ChangeTopicConfigs]): SET (0) and DELETE (1) for any topic
// setting, APPEND (2) and SUBTRACT (3) for list settings (cleanup.policy).
// The result is validated and enforced as with AlterConfigs. On a group
// resource it changes the group's configs ([Admin.ChangeGroupConfigs]):
// SET and DELETE (no group config is a list).
func init() {
	register(wire.APIIncrementalAlterConfigs, 0, 1, InReader, incrementalAlterConfigs)
}

func incrementalAlterConfigs(_ context.Context, r *Request, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, resource := range req.Resources {
		result := kmsg.NewIncrementalAlterConfigsResponseResource()
		result.ResourceType, result.ResourceName = resource.ResourceType, resource.ResourceName
		err := r.ConfigResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationAlterConfigs)
		if err == nil { // authorized (the broker's authorizationRules)
			err = alterableResource(resource.ResourceType)
		}
		switch {
		case err != nil:
		case resource.ResourceType == kmsg.ConfigResourceTypeGroupConfig:
			err = r.Admin.ChangeGroupConfigs(resource.ResourceName, resource.Configs, req.ValidateOnly)
		default:
			err = r.Admin.ChangeTopicConfigs(resource.ResourceName, resource.Configs, req.ValidateOnly)
		}
		result.ErrorCode, result.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Resources = append(resp.Resources, result)
	}
	return resp
}
