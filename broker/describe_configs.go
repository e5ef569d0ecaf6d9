package broker

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeConfigs v1–4 describes topic resources (every topic setting of
// topicSettings with its effective value and source: DYNAMIC_TOPIC_CONFIG
// for a topic override, STATIC_BROKER_CONFIG when a broker setting supplies
// it, DEFAULT_CONFIG otherwise) and the broker resource (every broker
// setting, STATIC_BROKER_CONFIG or DEFAULT_CONFIG, read-only). Synonyms
// list, most specific first, every key that could supply the value;
// documentation and types are included from v3. An internal topic is
// described with the overrides it was created with
// (Broker.internalTopicOverrides).
func init() {
	register(wire.APIDescribeConfigs, 1, 4, kmsgHandler(handleDescribeConfigs))
}

func handleDescribeConfigs(c *connection, req *kmsg.DescribeConfigsRequest) kmsg.Response {
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
		err := c.configResourceRefusal(resource.ResourceType, resource.ResourceName, kmsg.ACLOperationDescribeConfigs)
		switch {
		case err != nil: // authorizationRules
		case resource.ResourceType == kmsg.ConfigResourceTypeTopic:
			var config *topicConfig
			if config, err = c.broker.describableTopicConfig(resource.ResourceName); err == nil {
				described.Configs = c.broker.describeTopicConfigs(config, wanted, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case resource.ResourceType == kmsg.ConfigResourceTypeBroker:
			if err = c.broker.checkBrokerResource(resource.ResourceName); err == nil {
				described.Configs = c.broker.describeBrokerConfigs(wanted, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		default:
			err = fmt.Errorf("%w: resource type %d is not topic (2) or broker (4)", errInvalidRequest, resource.ResourceType)
		}
		described.ErrorCode, described.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, described)
	}
	return resp
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
