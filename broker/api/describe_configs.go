package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeConfigs v1–4 describes topic resources (every topic setting of
// the broker's topic settings table with its effective value and source:
// DYNAMIC_TOPIC_CONFIG for a topic override, STATIC_BROKER_CONFIG when a
// broker setting supplies it, DEFAULT_CONFIG otherwise;
// [Admin.DescribeTopicConfigs]) and the broker resource (every broker
// setting, STATIC_BROKER_CONFIG or DEFAULT_CONFIG, read-only;
// [Admin.DescribeBrokerConfigs]) and group resources (every group config,
// GROUP_CONFIG when the group sets it, DEFAULT_CONFIG with the broker's
// default otherwise; [Admin.DescribeGroupConfigs]). Synonyms list, most specific first,
// every key that could supply the value; documentation and types are
// included from v3. An internal topic is described with the overrides it
// was created with.
func init() {
	register(wire.APIDescribeConfigs, 1, 4, InReader, describeConfigs)
}

func describeConfigs(_ context.Context, r *Request, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, resource := range req.Resources {
		described := kmsg.NewDescribeConfigsResponseResource()
		described.ResourceType = resource.ResourceType
		described.ResourceName = resource.ResourceName
		wanted := func(name string) bool {
			if resource.ConfigNames == nil {
				return true
			}
			for _, n := range resource.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		err := r.ConfigResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationDescribeConfigs)
		switch {
		case err != nil: // the broker's authorizationRules
		case resource.ResourceType == kmsg.ConfigResourceTypeTopic:
			described.Configs, err = r.Admin.DescribeTopicConfigs(resource.ResourceName, wanted, req.IncludeSynonyms, req.IncludeDocumentation)
		case resource.ResourceType == kmsg.ConfigResourceTypeBroker:
			described.Configs, err = r.Admin.DescribeBrokerConfigs(resource.ResourceName, wanted, req.IncludeSynonyms, req.IncludeDocumentation)
		case resource.ResourceType == kmsg.ConfigResourceTypeGroupConfig:
			described.Configs, err = r.Admin.DescribeGroupConfigs(resource.ResourceName, wanted, req.IncludeSynonyms, req.IncludeDocumentation)
		default:
			err = fmt.Errorf("%w: resource type %d is not topic (2), broker (4) or group (32)", errcode.ErrInvalidRequest, resource.ResourceType)
		}
		described.ErrorCode, described.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Resources = append(resp.Resources, described)
	}
	return resp
}
