package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminService is the broker as api.Admin, the service package api's handlers see.
type adminService struct{ b *Broker }

// CreateTopic is [Broker.clusterCreateTopic] under the broker's lifetime.
func (s adminService) CreateTopic(rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (kmsg.CreateTopicsResponseTopic, error) {
	return s.b.clusterCreateTopic(s.b.ctx, rt, validateOnly)
}

// DeleteTopic is [Broker.clusterDeleteTopic] under the broker's lifetime.
func (s adminService) DeleteTopic(name string, id [16]byte) (string, [16]byte, error) {
	return s.b.clusterDeleteTopic(s.b.ctx, name, id)
}

// CreatePartitions is [Broker.clusterCreatePartitions] under the broker's
// lifetime.
func (s adminService) CreatePartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	return s.b.clusterCreatePartitions(s.b.ctx, rt, validateOnly)
}

// ReplaceTopicConfigs sets the topic's overrides to overrides
// (AlterConfigs).
func (s adminService) ReplaceTopicConfigs(name string, overrides map[string]string, validateOnly bool) error {
	return s.b.alterTopicConfigs(name, validateOnly,
		func(map[string]string) (map[string]string, error) { return overrides, nil })
}

// ChangeTopicConfigs applies IncrementalAlterConfigs operations to the
// topic's overrides (applyIncrementalChanges).
func (s adminService) ChangeTopicConfigs(name string, changes []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	return s.b.alterTopicConfigs(name, validateOnly,
		func(current map[string]string) (map[string]string, error) {
			return applyIncrementalChanges(current, changes)
		})
}

// DescribeTopicConfigs describes a topic's configs; internal topics are
// described too (the overrides they were created with,
// Broker.internalTopicOverrides).
func (s adminService) DescribeTopicConfigs(name string, wanted func(string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	config, err := s.b.describableTopicConfig(name)
	if err != nil {
		return nil, err
	}
	return s.b.describeTopicConfigs(config, wanted, synonyms, documentation), nil
}

// DescribeBrokerConfigs describes the broker settings, for our node id or
// "" (the cluster default).
func (s adminService) DescribeBrokerConfigs(name string, wanted func(string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if err := s.b.checkBrokerResource(name); err != nil {
		return nil, err
	}
	return s.b.describeBrokerConfigs(wanted, synonyms, documentation), nil
}

// alterTopicConfigs computes a topic's new overrides from its current ones
// with change, validates them and (unless validateOnly) applies them.
func (b *Broker) alterTopicConfigs(name string, validateOnly bool,
	change func(current map[string]string) (map[string]string, error)) error {
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

// describableTopicConfig resolves the config of a topic named in a
// DescribeConfigs resource; internal topics are described too (the
// overrides they were created with, Broker.internalTopicOverrides).
func (b *Broker) describableTopicConfig(name string) (*topicConfig, error) {
	t, err := b.configTopic(name)
	if err != nil {
		return nil, err
	}
	return t.config.Load(), nil
}

// configTopic resolves a topic named by a DescribeConfigs resource.
func (b *Broker) configTopic(name string) (*topic, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	if t := b.topicByName(name); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s", errUnknownTopic, name)
}

// checkBrokerResource accepts our node id, or "" (the cluster default).
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.nodeID)) {
		return nil
	}
	return fmt.Errorf("%w: broker %q is not this broker (%d)", errInvalidRequest, name, b.nodeID)
}

func (b *Broker) describeTopicConfigs(tc *topicConfig, wanted func(string) bool, synonyms, documentation bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, ts := range topicSettings {
		if !wanted(ts.name) {
			continue
		}
		entry := kmsg.NewDescribeConfigsResponseResourceConfig()
		entry.Name = ts.name
		entry.ConfigType = kmsg.ConfigType(ts.kind)
		value, fromKey := b.config.topicDefault(ts)
		entry.Source = kmsg.ConfigSourceDefaultConfig
		if fromKey != "" {
			entry.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		override, overridden := tc.overrides[ts.name]
		if overridden {
			value, entry.Source = override, kmsg.ConfigSourceDynamicTopicConfig
		}
		entry.Value = &value
		entry.IsDefault = entry.Source == kmsg.ConfigSourceDefaultConfig
		if documentation {
			entry.Documentation = &ts.doc
		}
		if synonyms {
			if overridden {
				entry.ConfigSynonyms = append(entry.ConfigSynonyms, synonym(ts.name, &override, kmsg.ConfigSourceDynamicTopicConfig))
			}
			entry.ConfigSynonyms = append(entry.ConfigSynonyms, b.brokerSynonyms(ts.brokerSynonyms)...)
		}
		out = append(out, entry)
	}
	return out
}

// brokerSynonyms lists the broker keys behind a setting: each one set
// statically, then the first one with a non-null default.
func (b *Broker) brokerSynonyms(keys []string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	for _, key := range keys {
		if v, ok := b.config.set[key]; ok {
			out = append(out, synonym(key, &v, kmsg.ConfigSourceStaticBrokerConfig))
		}
	}
	for _, key := range keys {
		if s, _ := findBrokerSetting(key); !s.null {
			v := s.defaultValue
			out = append(out, synonym(key, &v, kmsg.ConfigSourceDefaultConfig))
			break
		}
	}
	return out
}

func synonym(name string, value *string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, value, source
	return s
}

func (b *Broker) describeBrokerConfigs(wanted func(string) bool, synonyms, documentation bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, s := range brokerSettings {
		if !wanted(s.name) {
			continue
		}
		entry := kmsg.NewDescribeConfigsResponseResourceConfig()
		entry.Name = s.name
		entry.ConfigType = kmsg.ConfigType(s.kind)
		entry.ReadOnly = true // no dynamic broker configs
		entry.Source = kmsg.ConfigSourceDefaultConfig
		entry.IsDefault = true
		if v, ok := b.config.set[s.name]; ok {
			entry.Value = &v
			entry.Source, entry.IsDefault = kmsg.ConfigSourceStaticBrokerConfig, false
		} else if !s.null {
			v := s.defaultValue
			entry.Value = &v
		}
		if documentation {
			entry.Documentation = &s.doc
		}
		if synonyms {
			entry.ConfigSynonyms = b.brokerSynonyms([]string{s.name})
		}
		if s.kind == kindPassword {
			// A secret (an inline private key): never sent, as Kafka does.
			entry.Value, entry.IsSensitive = nil, true
			for i := range entry.ConfigSynonyms {
				entry.ConfigSynonyms[i].Value = nil
			}
		}
		out = append(out, entry)
	}
	return out
}

// AlterReassignment is the controller's [PartitionMover.AlterReassignment]
// under the broker's lifetime, after the replication-factor check of
// AlterPartitionReassignments v1.
func (s adminService) AlterReassignment(topic string, partition int32, target []int32, allowReplicationFactorChange bool) error {
	mover, err := s.b.partitionMover()
	if err != nil {
		return err
	}
	if target != nil && !allowReplicationFactorChange {
		roles := s.b.topicRoles(topic)
		if partition >= 0 && int(partition) < len(roles) {
			role := roles[partition]
			if have := len(role.Replicas) - len(role.RemovingReplicas); have != len(target) {
				return fmt.Errorf("%w: %s-%d has %d replicas, the target %v has %d, and the request does not allow a change", errInvalidReplication, topic, partition, have, target, len(target))
			}
		}
	}
	ctx, cancel := context.WithTimeout(s.b.ctx, clusterAdminTimeout)
	defer cancel()
	return mover.AlterReassignment(ctx, topic, partition, target)
}

// Reassignments lists the reassignments in progress from the applied roles.
func (s adminService) Reassignments(wanted map[string][]int32) []api.PartitionReassignment {
	if s.b.replication == nil {
		return nil
	}
	return s.b.reassignments(wanted)
}

// ElectLeader is the controller's [PartitionMover.ElectLeader] under the
// broker's lifetime.
func (s adminService) ElectLeader(topic string, partition int32, unclean bool) error {
	mover, err := s.b.partitionMover()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.b.ctx, clusterAdminTimeout)
	defer cancel()
	return mover.ElectLeader(ctx, topic, partition, unclean)
}
