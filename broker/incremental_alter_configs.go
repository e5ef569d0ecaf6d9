package broker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// IncrementalAlterConfigs v0–1 changes individual topic configs: SET (0)
// and DELETE (1) for any topic setting, APPEND (2) and SUBTRACT (3) for
// list settings (cleanup.policy). The result is validated and enforced as
// with AlterConfigs.
func init() {
	register(wire.APIIncrementalAlterConfigs, 0, 1, kmsgHandler(handleIncrementalAlterConfigs))
}

func handleIncrementalAlterConfigs(c *connection, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, resource := range req.Resources {
		result := kmsg.NewIncrementalAlterConfigsResponseResource()
		result.ResourceType, result.ResourceName = resource.ResourceType, resource.ResourceName
		err := c.configResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationAlterConfigs)
		if err == nil { // authorized (authorizationRules)
			err = b.alterTopicConfigs(resource.ResourceType, resource.ResourceName, req.ValidateOnly,
				func(current map[string]string) (map[string]string, error) {
					return applyIncrementalChanges(current, resource.Configs)
				})
		}
		result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, result)
	}
	return resp
}

// applyIncrementalChanges returns a copy of current with the operations
// applied in order.
func applyIncrementalChanges(current map[string]string, changes []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := make(map[string]string, len(current)+len(changes))
	for k, v := range current {
		next[k] = v
	}
	for _, change := range changes {
		ts, known := findTopicSetting(change.Name)
		if !known {
			return nil, fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, change.Name)
		}
		value := ""
		if change.Value != nil {
			value = *change.Value
		}
		switch change.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if change.Value == nil {
				return nil, fmt.Errorf("%w: SET %s needs a value", errInvalidConfig, change.Name)
			}
			next[change.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, change.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if ts.kind != kindList {
				return nil, fmt.Errorf("%w: %s is not a list; APPEND and SUBTRACT need one", errInvalidConfig, change.Name)
			}
			next[change.Name] = changeList(next[change.Name], value, change.Op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return nil, fmt.Errorf("%w: operation %d on %s", errInvalidRequest, change.Op, change.Name)
		}
	}
	return next, nil
}

// changeList appends or removes the comma-separated items of change.
func changeList(list, change string, appending bool) string {
	items := splitList(list)
	for _, item := range splitList(change) {
		present := slices.Contains(items, item)
		switch {
		case appending && !present:
			items = append(items, item)
		case !appending && present:
			items = slices.DeleteFunc(items, func(s string) bool { return s == item })
		}
	}
	return strings.Join(items, ",")
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
