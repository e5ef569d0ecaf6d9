package modes

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Transactional: a transactional.id per producer, commits every interval
// (or N records), a share of transactions aborted; one run per commit
// interval.
const Transactional = "transactional"

func init() {
	Register(Spec{
		Name:      Transactional,
		Help:      "transactional.id per producer, commit every --commit-interval, isolation.level=read_committed readers",
		Order:     50,
		Road:      BrokerRoad,
		Producers: TransactionalProducers,
		ProducerOptions: func(params ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID(params.TransactionalID),
				kgo.TransactionTimeout(params.TransactionTimeout)}
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["transactional.id"] = "exactly-<run id>-<run>-p<producer>"
			settings["transaction.timeout.ms"] = strconv.FormatInt(run.TransactionTimeout.Milliseconds(), 10)
			settings["commit.interval.ms"] = strconv.FormatInt(run.CommitInterval.Milliseconds(), 10)
			settings["commit.records"] = strconv.Itoa(run.CommitRecords)
			settings["abort.share"] = strconv.FormatFloat(run.AbortShare, 'f', -1, 64)
			settings["isolation.level"] = "read_committed (verification also reads read_uncommitted)"
		},
		// Aborted records must be in the log, and counted, but not lost;
		// read_committed must not return them.
		Readers:               []Reader{{Isolation: verify.ReadCommitted}, {Isolation: verify.ReadUncommitted}},
		Expect:                Expectation{},
		ClientFaults:          []faults.ClientActionKind{faults.ClientZombieProducer},
		SweepsCommitIntervals: true,
	})
}
