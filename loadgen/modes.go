package loadgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
)

// The delivery modes live in package modes, one file each; this file is
// the runner's side of them: what it asks of a mode's Spec.

// specOf returns the registered spec of mode; an unknown name (workload
// validation keeps them out of runs) gets an empty spec: no stage, no
// client fault, plain producers.
func specOf(mode string) *modes.Spec {
	if spec, ok := modes.Lookup(mode); ok {
		return spec
	}
	return &modes.Spec{Name: mode}
}

// spec is the plan's mode.
func (plan runPlan) spec() *modes.Spec { return specOf(plan.mode) }

// usesDatabase reports whether mode keeps state in the application
// database (a consume stage writing rows to a table).
func usesDatabase(mode string) bool {
	return specOf(mode).Stage.UsesDatabase()
}

// hasConsumeStage reports whether mode runs consume workers the
// consumer-crash fault can kill.
func hasConsumeStage(mode string) bool {
	return specOf(mode).Stage != modes.NoStage
}

// relays reports whether a run of mode under plan has a relay stage (a
// mode without a stage of its own, under group-churn): the input topic is
// relayed to an output topic.
func relays(plan faults.Plan, mode string) bool {
	return specOf(mode).RelaysUnderChurn && hasClient(plan, faults.ClientGroupChurn)
}

// runsConsumeStage reports whether a run of mode under plan has a
// consume stage.
func runsConsumeStage(plan faults.Plan, mode string) bool {
	return hasConsumeStage(mode) || relays(plan, mode)
}

// producerOptions returns the kgo options that put a producer in mode.
// transactionalID is used only by transactional producers.
func producerOptions(mode, transactionalID string, transactionTimeout time.Duration) ([]kgo.Opt, error) {
	spec := specOf(mode)
	if spec.ProducerOptions == nil {
		return nil, fmt.Errorf("unknown delivery mode %q", mode)
	}
	return spec.ProducerOptions(modes.ProducerParams{TransactionalID: transactionalID, TransactionTimeout: transactionTimeout}), nil
}

// clientSettings states a mode's client configuration in Kafka's terms:
// the defaults, then the mode's own, then group-churn's.
func clientSettings(plan runPlan) map[string]string {
	settings := map[string]string{
		"acks":                                  "all",
		"enable.idempotence":                    "true",
		"retries":                               "2147483647 (until delivery.timeout)",
		"max.in.flight.requests.per.connection": strconv.Itoa(modes.MaxInFlight),
		"compression.type":                      "none",
		"client":                                "franz-go kgo",
		"isolation.level":                       "read_committed",
	}
	if spec := specOf(plan.mode); spec.Settings != nil {
		workload := plan.workload
		spec.Settings(modes.RunParams{
			TransactionTimeout: time.Duration(workload.Transaction.Timeout), CommitInterval: plan.commitInterval,
			CommitRecords: workload.Transaction.CommitRecords, AbortShare: workload.Transaction.AbortShare,
			StageWorkers: workload.Pipeline.Workers, Partitions: workload.Partitions,
			DedupWindow: workload.Application.DedupWindow, Database: plan.database,
			ShareReleaseEvery: plan.shareReleaseEvery(), ShareLockDuration: plan.shareLockDuration(),
			ShareDeliveryLimit: plan.shareDeliveryLimit(),
		}, settings)
	}
	churnSettings(plan, settings)
	crashSessionSettings(plan, settings)
	groupProtocolSettings(plan, settings)
	security := plan.security.Config()
	settings["security.protocol"] = clientsec.Plaintext
	if !security.IsZero() {
		settings["security.protocol"] = security.Protocol
		if security.SASL() {
			settings["sasl.mechanism"] = security.Mechanism
		}
	}
	return settings
}
