package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// AlterConfigs v0–2 replaces a topic's whole set of config overrides
// (entries with a null value are dropped). Values are validated against
// the topic settings table (topicSettings) and enforced from the next
// request on: max.message.bytes, min.insync.replicas and
// message.timestamp.type by the produce path, segment and retention
// settings by the partition logs. In a cluster the change goes through the
// controller to every replica. Broker resources are refused: broker
// settings are static here.
func init() {
	register(wire.APIAlterConfigs, 0, 2, kmsgHandler(handleAlterConfigs))
}

func handleAlterConfigs(c *connection, req *kmsg.AlterConfigsRequest) kmsg.Response {
	b := c.broker
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
		err := c.configResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationAlterConfigs)
		if err == nil { // authorized (authorizationRules)
			err = b.alterTopicConfigs(resource.ResourceType, resource.ResourceName, req.ValidateOnly,
				func(map[string]string) (map[string]string, error) { return overrides, nil })
		}
		result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, result)
	}
	return resp
}

// alterTopicConfigs computes a topic's new overrides from its current ones
// with change, validates them and (unless validateOnly) applies them.
func (b *Broker) alterTopicConfigs(resourceType kmsg.ConfigResourceType, name string, validateOnly bool,
	change func(current map[string]string) (map[string]string, error)) error {
	switch resourceType {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		return fmt.Errorf("%w: broker settings are static (set them in server.properties or with --config)", errInvalidRequest)
	default:
		return fmt.Errorf("%w: resource type %d is not a topic (2)", errInvalidRequest, resourceType)
	}
	if isInternalTopicName(name) {
		// A replicated internal topic: retention must stay off.
		return fmt.Errorf("%w: %s belongs to a coordinator; clients cannot alter it", errInternalTopic, name)
	}
	return b.clusterAlterTopicConfigs(b.clusterTopics(), name, validateOnly, change)
}

// validChange returns change(current) when the result is a valid set of
// topic overrides.
func validChange(current map[string]string, change func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	next, err := change(current)
	if err != nil {
		return nil, err
	}
	if err := validateTopicConfigs(next); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	return next, nil
}

// clusterAlterTopicConfigs is alterTopicConfigs in a cluster: the current
// overrides are the cluster metadata's, and the new ones go to the
// controller, which hands them to every replica, so a topic's configs are
// the same on every broker whichever broker the request reached.
func (b *Broker) clusterAlterTopicConfigs(controller TopicController, name string, validateOnly bool,
	change func(current map[string]string) (map[string]string, error)) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	current, ok := controller.TopicConfigs(name)
	if !ok {
		return fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	next, err := validChange(current, change)
	if err != nil || validateOnly {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterAdminTimeout)
	defer cancel()
	if err := controller.SetTopicConfigs(ctx, name, next); err != nil {
		return fmt.Errorf("set configs of topic %s: %w", name, err)
	}
	return nil
}
