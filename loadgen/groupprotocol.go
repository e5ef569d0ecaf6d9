package loadgen

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol of a run's group consumers (Kafka's client
// setting group.protocol): every consume stage (transact workers,
// database stages, the relay, group-churn's workers and consumer-crash's
// worker subprocesses) joins its group with it.
const (
	// GroupProtocolClassic is JoinGroup/SyncGroup/Heartbeat, the client
	// assigning partitions (the default).
	GroupProtocolClassic = "classic"
	// GroupProtocolConsumer is KIP-848's ConsumerGroupHeartbeat, the
	// broker assigning partitions with the server assignor
	// ConsumerServerAssignor.
	GroupProtocolConsumer = "consumer"
	// GroupProtocolBoth is the command line's comparison: every run
	// under both protocols, interleaved over rounds (GroupProtocolsSpec).
	GroupProtocolBoth = "both"
)

// GroupProtocols are the protocols a run may use, in the order a
// comparison round runs them first.
var GroupProtocols = []string{GroupProtocolClassic, GroupProtocolConsumer}

// ConsumerServerAssignor is the server-side assignor consumer-protocol
// members ask for (franz-go maps its sticky balancers to it).
const ConsumerServerAssignor = "uniform"

// groupProtocolOf is the protocol a workload's groups use ("" is classic).
func groupProtocolOf(w Workload) string {
	if w.GroupProtocol == "" {
		return GroupProtocolClassic
	}
	return w.GroupProtocol
}

// validateGroupProtocol reports a protocol that is not one of
// GroupProtocols.
func validateGroupProtocol(protocol string) error {
	if protocol != "" && !slices.Contains(GroupProtocols, protocol) {
		return fmt.Errorf("group_protocol %q is not one of %s", protocol, strings.Join(GroupProtocols, ", "))
	}
	return nil
}

// groupProtocol is the protocol of the plan's group consumers.
func (plan runPlan) groupProtocol() string { return groupProtocolOf(plan.workload) }

// usesGroup reports whether the run has group consumers (a consume
// stage, or a relay under group-churn): only those runs depend on the
// protocol.
func (plan runPlan) usesGroup() bool {
	return runsConsumeStage(plan.faults, plan.mode) && !plan.sharesGroup() // a share group has no group.protocol
}

// groupProtocolOptions are the kgo options of a group consumer using
// protocol: for consumer, KIP-848 with the sticky balancer, which franz-go
// sends as server assignor "uniform" (with another balancer franz-go
// would silently stay on the classic protocol). Later options must not
// set another balancer.
func groupProtocolOptions(protocol string) []kgo.Opt {
	if protocol != GroupProtocolConsumer {
		return nil
	}
	return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
}

// groupOptions are groupProtocolOptions of the plan's protocol.
func (plan runPlan) groupOptions() []kgo.Opt { return groupProtocolOptions(plan.groupProtocol()) }

// groupProtocolSettings records the run's protocol in its client settings.
func groupProtocolSettings(plan runPlan, settings map[string]string) {
	if !plan.usesGroup() {
		return
	}
	settings["group.protocol"] = plan.groupProtocol()
	if plan.groupProtocol() == GroupProtocolConsumer {
		settings["group.remote.assignor"] = ConsumerServerAssignor
	}
}

// wantsConsumerProtocol reports whether some run of w may use the
// consumer protocol (Preflight then checks the target has it).
func wantsConsumerProtocol(w Workload) bool {
	return w.GroupProtocols != nil || groupProtocolOf(w) == GroupProtocolConsumer
}

// checkConsumerProtocol fails, in one line, when the cluster does not
// advertise ConsumerGroupHeartbeat v1 (KIP-848 as Kafka 4.0 ships it, the
// version franz-go requires): without it franz-go would fall back to the
// classic protocol without a word, and the runs would measure the wrong
// protocol.
func checkConsumerProtocol(ctx context.Context, client *kgo.Client, cluster string) error {
	versionsCtx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	response, err := kmsg.NewPtrApiVersionsRequest().RequestWith(versionsCtx, client)
	if err != nil {
		return fmt.Errorf("%s did not answer ApiVersions (%v): cannot tell whether it serves --group-protocol consumer", cluster, err)
	}
	return consumerProtocolSupport(cluster, response.ApiKeys)
}

// consumerProtocolSupport is checkConsumerProtocol's verdict on the
// advertised versions.
func consumerProtocolSupport(cluster string, keys []kmsg.ApiVersionsResponseApiKey) error {
	for _, key := range keys {
		if key.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) && key.MaxVersion >= 1 {
			return nil
		}
	}
	return fmt.Errorf("%s does not serve the consumer group protocol (KIP-848: no ConsumerGroupHeartbeat v1 in its ApiVersions): "+
		"use --group-protocol classic, or a broker that has it (Kafka 4.0+, exactly broker)", cluster)
}
