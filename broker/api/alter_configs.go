package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// AlterConfigs v0–2 replaces a topic's whole set of config overrides
// (entries with a null value are dropped; [Admin.ReplaceTopicConfigs]).
// Values are validated against the broker's topic settings table and
// enforced from the next request on: max.message.bytes,
// min.insync.replicas and message.timestamp.type by the produce path,
// segment and retention settings by the partition logs. In a cluster the
// change goes through the controller to every replica. On a group
// resource it replaces the group's configs ([Admin.ReplaceGroupConfigs]).
// Broker resources are refused: broker settings are static here.
func init() {
	register(wire.APIAlterConfigs, 0, 2, InReader, alterConfigs)
}

func alterConfigs(_ context.Context, r *Request, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, resource := range req.Resources {
		result := kmsg.NewAlterConfigsResponseResource()
		result.ResourceType, result.ResourceName = resource.ResourceType, resource.ResourceName
		overrides := map[string]string{}
		for _, config := range resource.Configs {
			if config.Value != nil {
				overrides[config.Name] = *config.Value
			}
		}
		err := r.ConfigResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationAlterConfigs)
		if err == nil { // authorized (the broker's authorizationRules)
			err = alterableResource(resource.ResourceType)
		}
		switch {
		case err != nil:
		case resource.ResourceType == kmsg.ConfigResourceTypeGroupConfig:
			err = r.Admin.ReplaceGroupConfigs(resource.ResourceName, overrides, req.ValidateOnly)
		default:
			err = r.Admin.ReplaceTopicConfigs(resource.ResourceName, overrides, req.ValidateOnly)
		}
		result.ErrorCode, result.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Resources = append(resp.Resources, result)
	}
	return resp
}

// alterableResource refuses the resources AlterConfigs and
// IncrementalAlterConfigs cannot change: anything but a topic or a group.
func alterableResource(resourceType kmsg.ConfigResourceType) error {
	switch resourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeGroupConfig:
		return nil
	case kmsg.ConfigResourceTypeBroker:
		return fmt.Errorf("%w: broker settings are static (set them in server.properties or with --config)", errcode.ErrInvalidRequest)
	default:
		return fmt.Errorf("%w: resource type %d is not a topic (2) or a group (32)", errcode.ErrInvalidRequest, resourceType)
	}
}
