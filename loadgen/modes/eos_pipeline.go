package modes

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// EOSPipeline: idempotent producers feed an input topic;
// GroupTransactSession workers consume it read_committed and produce each
// record to an output topic in the transaction that commits their input
// offsets (Kafka's own exactly-once processing).
const EOSPipeline = "eos-pipeline"

func init() {
	Register(Spec{
		Name:  EOSPipeline,
		Help:  "consume-transform-produce in one transaction (GroupTransactSession), isolation.level=read_committed",
		Order: 60,
		Road:  BrokerRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["transactional.id"] = "exactly-<run id>-<run>-w<worker> (workers); input producers idempotent"
			settings["isolation.level"] = "read_committed"
			settings["group.id"] = "exactly-<run id>-<run>"
			settings["group.instance.id"] = "in-process workers: their transactional.id (static members: a worker's new session takes its place at once)"
			settings["pipeline.workers"] = strconv.Itoa(run.StageWorkers)
			settings["commit"] = "one transaction per poll (GroupTransactSession)"
		},
		Stage: TransactStage,
		// No loss, no duplicates, no reordering, under every fault
		// (group-churn's aborting workers included).
		Expect:       Expectation{},
		ClientFaults: []faults.ClientActionKind{faults.ClientConsumerCrash, faults.ClientGroupChurn},
	})
}
