package loadgen

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// brokerSettingNames are the broker settings that shape what the load
// generator measures: when an acknowledged write is durable (our
// log.fsync; Kafka's log.flush.interval.*) and how many replicas must
// have it.
var brokerSettingNames = []string{"log.fsync", "log.flush.interval.messages", "log.flush.interval.ms", "min.insync.replicas"}

// unknownSetting is a broker setting's value when the broker did not
// describe it.
const unknownSetting = "unknown"

// describeTarget adds to target whether the broker shares the load
// generator's machine and the broker settings of brokerSettingNames, asked
// of the first broker with DescribeConfigs (bounded; every setting
// "unknown" if the target cannot answer).
func describeTarget(ctx context.Context, admin *kgo.Client, kind string, target *report.Target) {
	shared, sharing := sharesMachine(kind, target.Bootstrap)
	target.SharesMachine, target.Sharing = shared, sharing
	target.BrokerSettings = brokerSettings(ctx, admin)
}

// sharesMachine says whether a target of kind at bootstrap runs on this
// machine: embedded and kfake run in this process, a bootstrap target on
// loopback addresses runs here; any other address is not known (nil).
func sharesMachine(kind string, bootstrap []string) (*bool, string) {
	yes := true
	switch kind {
	case TargetEmbedded:
		return &yes, "the broker runs in the load generator's process: they share this machine's cores"
	case TargetKfake:
		return &yes, "kfake runs in the load generator's process: they share this machine's cores"
	}
	for _, address := range bootstrap {
		if !loopbackAddress(address) {
			return nil, "the brokers are at " + address + " and others: whether they share this machine is not known"
		}
	}
	if len(bootstrap) == 0 {
		return nil, "no broker address: not known"
	}
	return &yes, "the brokers listen on loopback addresses: they run on this machine and share its cores"
}

// loopbackAddress reports whether host:port names this machine's loopback
// interface.
func loopbackAddress(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// brokerSettings describes brokerSettingNames on the first broker the
// admin client knows.
func brokerSettings(ctx context.Context, admin *kgo.Client) map[string]string {
	settings := make(map[string]string, len(brokerSettingNames))
	for _, name := range brokerSettingNames {
		settings[name] = unknownSetting
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	metadata, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil || len(metadata.Brokers) == 0 {
		return settings
	}
	request := kmsg.NewPtrDescribeConfigsRequest()
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeBroker
	resource.ResourceName = strconv.Itoa(int(metadata.Brokers[0].NodeID))
	resource.ConfigNames = brokerSettingNames
	request.Resources = append(request.Resources, resource)
	response, err := request.RequestWith(ctx, admin)
	if err != nil {
		return settings
	}
	for _, described := range response.Resources {
		if described.ErrorCode != 0 {
			continue
		}
		for _, config := range described.Configs {
			if _, wanted := settings[config.Name]; wanted && config.Value != nil {
				settings[config.Name] = *config.Value
				if config.Source == kmsg.ConfigSourceDefaultConfig {
					settings[config.Name] += " (default)"
				}
			}
		}
	}
	return settings
}
