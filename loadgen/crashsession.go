package loadgen

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/stages"
)

// The session of consumer-crash's workers. On the classic protocol each
// worker asks for a stages.ShortSessionTimeout session, so the group
// notices a SIGKILLed worker within seconds and its partitions go to the
// others before the drain ends. On the consumer protocol (KIP-848) the
// client has no say: the broker's group.consumer.session.timeout.ms
// (Kafka's default 45 s) decides how long a killed worker keeps its
// partitions. So:
//
//   - the brokers the load generator starts for a workload (embedded,
//     --target cluster) get the classic workers' session
//     (LaunchedBrokerProperties) when it runs consumer-crash on the
//     consumer protocol;
//   - on every target, Run asks the broker for its
//     group.consumer.session.timeout.ms (DescribeConfigs; Kafka's default
//     when it does not say) and gives each consumer-crash cell on the
//     consumer protocol a drain of at least that session plus
//     crashDrainMargin, saying so in one line (Suite.Notes).

// consumerSessionName is the broker setting of the consumer protocol's
// session timeout.
const consumerSessionName = "group.consumer.session.timeout.ms"

// kafkaConsumerSessionTimeout is Kafka's default of consumerSessionName,
// assumed when the broker does not describe it.
const kafkaConsumerSessionTimeout = 45 * time.Second

// crashDrainMargin is the drain a consumer-crash cell keeps beyond the
// session of a worker killed as the load ends: the time its partitions'
// new owners need to catch up, as the classic protocol's 20 s drain
// leaves 14 s beyond the workers' 6 s session.
const crashDrainMargin = 15 * time.Second

// LaunchedBrokerProperties are the broker settings the brokers the load
// generator starts for workload (the embedded broker, a cluster target's
// brokers) get (nil: none beyond their defaults). A workload
// running consumer-crash on the consumer protocol gets the classic crash
// workers' session and heartbeat interval as
// group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms, so a killed worker's partitions
// move on as soon on either protocol. Other workloads keep Kafka's
// defaults, so that the consumer protocol is measured as Kafka ships it.
//
// Share groups are the same: their members' session is the broker's (or
// the group's) share.session.timeout.ms, so a workload running
// consumer-crash on the share-group mode gets it as
// group.share.session.timeout.ms and group.share.heartbeat.interval.ms.
func LaunchedBrokerProperties(workload Workload) map[string]string {
	if !runsConsumerCrash(workload) {
		return nil
	}
	properties := map[string]string{}
	if wantsConsumerProtocol(workload) {
		properties[consumerSessionName] = strconv.FormatInt(stages.ShortSessionTimeout.Milliseconds(), 10)
		properties["group.consumer.heartbeat.interval.ms"] = strconv.FormatInt(stages.ShortHeartbeatInterval.Milliseconds(), 10)
	}
	if slices.Contains(workload.Modes, modes.ShareGroup) {
		properties[shareSessionName] = strconv.FormatInt(stages.ShortSessionTimeout.Milliseconds(), 10)
		properties["group.share.heartbeat.interval.ms"] = strconv.FormatInt(stages.ShortHeartbeatInterval.Milliseconds(), 10)
	}
	if len(properties) == 0 {
		return nil
	}
	return properties
}

// shareSessionName is the broker setting of share group members' session
// timeout (Kafka's default 45 s, as the consumer protocol's).
const shareSessionName = "group.share.session.timeout.ms"

// crashesShareConsumers reports whether plan kills share-group consumers:
// their partitions stay theirs until their session ends.
func (plan runPlan) crashesShareConsumers() bool {
	return plan.mode == modes.ShareGroup && hasClient(plan.faults, faults.ClientConsumerCrash) &&
		plan.spec().AcceptsClientFault(faults.ClientConsumerCrash)
}

// fitShareCrashDrains lengthens the drain of each plan that kills share
// consumers to the broker's share session plus crashDrainMargin, and
// returns the line that says so.
func fitShareCrashDrains(plans []runPlan, session time.Duration, known bool) string {
	return fitDrains(plans, runPlan.crashesShareConsumers, session, known, shareSessionName,
		"consumer-crash on share groups: a killed consumer keeps its partitions for its session")
}

// runsConsumerCrash reports whether a plan of workload's fault matrix
// kills consume workers.
func runsConsumerCrash(workload Workload) bool {
	entries := workload.Faults
	if workload.Overhead != nil {
		entries = append(slices.Clone(entries), workload.Overhead.Faults...)
	}
	for _, entry := range entries {
		if plan, err := faults.LoadPlan(entry.Plan); err == nil && hasClient(plan, faults.ClientConsumerCrash) {
			return true
		}
	}
	return false
}

// crashesOnConsumerProtocol reports whether plan kills consume workers
// that are members of a consumer-protocol group.
func (plan runPlan) crashesOnConsumerProtocol() bool {
	return hasClient(plan.faults, faults.ClientConsumerCrash) && plan.spec().AcceptsClientFault(faults.ClientConsumerCrash) &&
		plan.groupProtocol() == GroupProtocolConsumer
}

// crashDrain is the drain of a consumer-crash cell on the consumer
// protocol with the broker's session: at least session plus
// crashDrainMargin.
func crashDrain(drain, session time.Duration) time.Duration {
	return max(drain, session+crashDrainMargin)
}

// fitCrashDrains sets the broker's session in each plan that crashes
// consumer-protocol workers and lengthens its drain to crashDrain; it
// returns the line that says so ("" without such plans). known says
// whether the broker described its session (else session is Kafka's
// default).
func fitCrashDrains(plans []runPlan, session time.Duration, known bool) string {
	return fitDrains(plans, runPlan.crashesOnConsumerProtocol, session, known, consumerSessionName,
		"consumer-crash on the consumer protocol: a killed worker keeps its partitions for the session")
}

// fitDrains lengthens the drain of each plan crashes picks to crashDrain
// of session (a consumer-protocol plan also records the session), and
// returns the line that says so, opening with what, naming the setting
// name the session came from.
func fitDrains(plans []runPlan, crashes func(runPlan) bool, session time.Duration, known bool, name, what string) string {
	var drains []string
	for i := range plans {
		if !crashes(plans[i]) {
			continue
		}
		if plans[i].crashesOnConsumerProtocol() {
			plans[i].consumerSession = session
		}
		drain := Duration(crashDrain(time.Duration(plans[i].workload.Drain), session))
		plans[i].workload.Drain = drain
		if !slices.Contains(drains, drain.String()) {
			drains = append(drains, drain.String())
		}
	}
	if len(drains) == 0 {
		return ""
	}
	source := "the broker's " + name
	if !known {
		source = "the broker did not describe " + name + "; Kafka's default"
	}
	return fmt.Sprintf("%s, %s (%s), so those cells drain for %s (the session + %s)",
		what, session, source, strings.Join(drains, ", "), crashDrainMargin)
}

// consumerSessionTimeout asks the first broker the admin client knows for
// its group.consumer.session.timeout.ms (bounded); known is false when it
// does not say, and the timeout is then Kafka's default.
func consumerSessionTimeout(ctx context.Context, admin *kgo.Client) (session time.Duration, known bool) {
	return brokerSessionTimeout(ctx, admin, consumerSessionName)
}

// brokerSessionTimeout asks the first broker the admin client knows for
// the session timeout setting name (bounded); known is false when it does
// not say, and the timeout is then Kafka's default (45 s for both the
// consumer protocol and share groups).
func brokerSessionTimeout(ctx context.Context, admin *kgo.Client, name string) (session time.Duration, known bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	metadata, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil || len(metadata.Brokers) == 0 {
		return kafkaConsumerSessionTimeout, false
	}
	request := kmsg.NewPtrDescribeConfigsRequest()
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeBroker
	resource.ResourceName = strconv.Itoa(int(metadata.Brokers[0].NodeID))
	resource.ConfigNames = []string{name}
	request.Resources = append(request.Resources, resource)
	response, err := request.RequestWith(ctx, admin)
	if err != nil {
		return kafkaConsumerSessionTimeout, false
	}
	return describedSession(response, name)
}

// describedSession reads the setting name from a DescribeConfigs response
// (Kafka's default when it is missing or not a positive number of
// milliseconds).
func describedSession(response *kmsg.DescribeConfigsResponse, name string) (time.Duration, bool) {
	for _, described := range response.Resources {
		if described.ErrorCode != 0 {
			continue
		}
		for _, config := range described.Configs {
			if config.Name != name || config.Value == nil {
				continue
			}
			if ms, err := strconv.ParseInt(*config.Value, 10, 64); err == nil && ms > 0 {
				return time.Duration(ms) * time.Millisecond, true
			}
		}
	}
	return kafkaConsumerSessionTimeout, false
}

// crashSessionSettings records the crash workers' session in a
// consumer-crash run's client settings.
func crashSessionSettings(plan runPlan, settings map[string]string) {
	if !hasClient(plan.faults, faults.ClientConsumerCrash) || !plan.spec().AcceptsClientFault(faults.ClientConsumerCrash) {
		return
	}
	if !plan.crashesOnConsumerProtocol() {
		settings["session.timeout.ms"] = strconv.FormatInt(stages.ShortSessionTimeout.Milliseconds(), 10)
		return
	}
	if plan.consumerSession > 0 {
		settings[consumerSessionName] = fmt.Sprintf("%d (the broker's; the cell drains for %s)",
			plan.consumerSession.Milliseconds(), plan.workload.Drain)
	}
}
