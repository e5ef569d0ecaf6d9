package loadgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Delivery modes. Each maps to producer (and, for reads, consumer) settings
// stated in Kafka's terms in the results.
const (
	// ModeAtMostOnce: acks=0, no retries, no idempotence.
	ModeAtMostOnce = "at-most-once"
	// ModeAtMostOnceAcks1: acks=1, no retries, no idempotence.
	ModeAtMostOnceAcks1 = "at-most-once-acks1"
	// ModeAtLeastOnce: acks=all, retries, no idempotence, 5 in flight. The
	// baseline the others are compared with.
	ModeAtLeastOnce = "at-least-once"
	// ModeIdempotent: acks=all, enable.idempotence=true.
	ModeIdempotent = "idempotent"
	// ModeTransactional: a transactional.id per producer, commits every
	// interval (or N records), a share of transactions aborted.
	ModeTransactional = "transactional"
	// ModeEOSPipeline: idempotent producers feed an input topic;
	// GroupTransactSession workers consume it read_committed and produce
	// each record to an output topic in the transaction that commits their
	// input offsets.
	ModeEOSPipeline = "eos-pipeline"
)

// AllModes lists the modes in the order the standard suite runs them.
var AllModes = []string{ModeAtMostOnce, ModeAtMostOnceAcks1, ModeAtLeastOnce, ModeIdempotent, ModeTransactional, ModeEOSPipeline}

// BaselineMode is the mode whose throughput other runs are compared with.
const BaselineMode = ModeAtLeastOnce

// maxInFlight is max.in.flight.requests.per.connection for every mode that
// allows more than one.
const maxInFlight = 5

// producerOptions returns the kgo options that put a producer in mode.
// transactionalID is used only by the transactional mode.
func producerOptions(mode, transactionalID string, transactionTimeout time.Duration) ([]kgo.Opt, error) {
	switch mode {
	case ModeAtMostOnce:
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
			kgo.MaxProduceRequestsInflightPerBroker(maxInFlight)}, nil
	case ModeAtMostOnceAcks1:
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
			kgo.MaxProduceRequestsInflightPerBroker(maxInFlight)}, nil
	case ModeAtLeastOnce:
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(maxInFlight)}, nil
	case ModeIdempotent, ModeEOSPipeline:
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case ModeTransactional:
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID(transactionalID),
			kgo.TransactionTimeout(transactionTimeout)}, nil
	}
	return nil, fmt.Errorf("unknown delivery mode %q", mode)
}

// clientSettings states a mode's client configuration in Kafka's terms.
func clientSettings(plan runPlan) map[string]string {
	settings := map[string]string{
		"acks":                                  "all",
		"enable.idempotence":                    "true",
		"retries":                               "2147483647 (until delivery.timeout)",
		"max.in.flight.requests.per.connection": strconv.Itoa(maxInFlight),
		"compression.type":                      "none",
		"client":                                "franz-go kgo",
	}
	switch plan.mode {
	case ModeAtMostOnce:
		settings["acks"], settings["enable.idempotence"], settings["retries"] = "0", "false", "0"
	case ModeAtMostOnceAcks1:
		settings["acks"], settings["enable.idempotence"], settings["retries"] = "1", "false", "0"
	case ModeAtLeastOnce:
		settings["enable.idempotence"] = "false"
	case ModeTransactional:
		settings["transactional.id"] = "exactly-<run id>-<run>-p<producer>"
		settings["transaction.timeout.ms"] = strconv.FormatInt(time.Duration(plan.workload.Transaction.Timeout).Milliseconds(), 10)
		settings["commit.interval.ms"] = strconv.FormatInt(plan.commitInterval.Milliseconds(), 10)
		settings["commit.records"] = strconv.Itoa(plan.workload.Transaction.CommitRecords)
		settings["abort.share"] = strconv.FormatFloat(plan.workload.Transaction.AbortShare, 'f', -1, 64)
		settings["isolation.level"] = "read_committed (verification also reads read_uncommitted)"
	case ModeEOSPipeline:
		settings["transactional.id"] = "exactly-<run id>-<run>-w<worker> (workers); input producers idempotent"
		settings["isolation.level"] = "read_committed"
		settings["group.id"] = "exactly-<run id>-<run>"
		settings["pipeline.workers"] = strconv.Itoa(plan.workload.Pipeline.Workers)
		settings["commit"] = "one transaction per poll (GroupTransactSession)"
	}
	if plan.mode != ModeTransactional && plan.mode != ModeEOSPipeline {
		settings["isolation.level"] = "read_committed"
	}
	return settings
}
