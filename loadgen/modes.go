package loadgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
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

	// The application's road to exactly-once (seed §3.1), measured beside
	// the broker's (§3.2) on the same records and faults.

	// ModeSingleWriterCheck: one writer per partition, acks=all,
	// idempotence off, no client retries; after a produce error or timeout
	// the writer reads the partition's tail to learn which of its records
	// were written and resends only the missing ones.
	ModeSingleWriterCheck = "single-writer-check"
	// ModeConsumerDedup: an at-least-once producer with a unique key per
	// record; the consumer drops keys it has seen, remembered in the
	// application database within a bounded window.
	ModeConsumerDedup = "consumer-dedup"
	// ModeExternalOffsets: idempotent producers feed an input topic; a
	// consume-transform stage with auto-commit off writes its output rows
	// and its partition offsets in one database transaction and seeks to
	// the stored offsets on every assignment.
	ModeExternalOffsets = "external-offsets"
)

// AllModes lists the modes in the order the standard suite runs them.
var AllModes = []string{ModeAtMostOnce, ModeAtMostOnceAcks1, ModeAtLeastOnce, ModeIdempotent, ModeTransactional, ModeEOSPipeline,
	ModeSingleWriterCheck, ModeConsumerDedup, ModeExternalOffsets}

// BrokerModes are the baselines and the broker's road to exactly-once
// (seed §3.2).
var BrokerModes = []string{ModeAtMostOnce, ModeAtMostOnceAcks1, ModeAtLeastOnce, ModeIdempotent, ModeTransactional, ModeEOSPipeline}

// ApplicationModes are the seed's §3.1 road.
var ApplicationModes = []string{ModeSingleWriterCheck, ModeConsumerDedup, ModeExternalOffsets}

// usesDatabase reports whether mode keeps state in the application
// database (a consume stage writing rows to a table).
func usesDatabase(mode string) bool {
	return mode == ModeConsumerDedup || mode == ModeExternalOffsets
}

// hasConsumeStage reports whether mode runs consume workers the
// consumer-crash fault can kill.
func hasConsumeStage(mode string) bool {
	return mode == ModeEOSPipeline || usesDatabase(mode)
}

// GroupChurnModes are the modes the group-churn fault applies to: those
// with a consume stage, and at-least-once, which runs one (its relay, the
// classic at-least-once consume-produce loop) only under group-churn.
var GroupChurnModes = []string{ModeAtLeastOnce, ModeEOSPipeline, ModeConsumerDedup, ModeExternalOffsets}

// relays reports whether a run of mode under plan has at-least-once's
// relay stage: the input topic is relayed to an output topic.
func relays(plan faults.Plan, mode string) bool {
	return mode == ModeAtLeastOnce && hasClient(plan, faults.ClientGroupChurn)
}

// runsConsumeStage reports whether a run of mode under plan has a
// consume stage.
func runsConsumeStage(plan faults.Plan, mode string) bool {
	return hasConsumeStage(mode) || relays(plan, mode)
}

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
	case ModeAtLeastOnce, ModeConsumerDedup:
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(maxInFlight)}, nil
	case ModeSingleWriterCheck:
		// The application resends; the client must not (a client retry
		// after a lost ack would write a second copy).
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxProduceRequestsInflightPerBroker(maxInFlight),
			kgo.RecordDeliveryTimeout(singleWriterDeliveryTimeout)}, nil
	case ModeIdempotent, ModeEOSPipeline, ModeExternalOffsets:
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
	applicationSettings(plan, settings)
	churnSettings(plan, settings)
	return settings
}

// applicationSettings adds the application-level modes' settings.
func applicationSettings(plan runPlan, settings map[string]string) {
	switch plan.mode {
	case ModeSingleWriterCheck:
		settings["enable.idempotence"], settings["retries"] = "false", "0 (the application resends after reading the partition's tail)"
		settings["writers"] = strconv.Itoa(plan.workload.Partitions) + " (one per partition, manual partitioner)"
		settings["delivery.timeout.ms"] = strconv.FormatInt(singleWriterDeliveryTimeout.Milliseconds(), 10)
		settings["recovery"] = "on an error or timeout: flush, ListOffsets, read the partition from the last known-good offset to its end, resend only the records not found"
	case ModeConsumerDedup:
		settings["enable.idempotence"] = "false"
		settings["record.key"] = "unique per record: p<producer>-<sequence>"
		settings["group.id"] = "exactly-<run id>-<run>"
		settings["enable.auto.commit"] = "true, of records marked after their database commit (kgo AutoCommitMarks, every 1s)"
		settings["dedup.window"] = fmt.Sprintf("the keys of the last %d offsets of each partition; a copy arriving later than that is not detected (counted as unprotected)",
			plan.workload.Application.DedupWindow)
		settings["consumer.workers"] = strconv.Itoa(plan.workload.Pipeline.Workers)
		settings["database"] = plan.database
	case ModeExternalOffsets:
		settings["group.id"] = "exactly-<run id>-<run>"
		settings["enable.auto.commit"] = "false (offsets live in the database, never committed to Kafka)"
		settings["commit"] = "one database transaction per poll: output rows + offsets (compare-and-set)"
		settings["seek"] = "on every assignment, to the offsets stored in the database (kgo AdjustFetchOffsetsFn)"
		settings["consumer.workers"] = strconv.Itoa(plan.workload.Pipeline.Workers)
		settings["database"] = plan.database
		settings["input producers"] = "idempotent"
	}
}
