package modes

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// ConsumerDedup: an at-least-once producer with a unique key per record;
// the consumer drops keys it has seen, remembered in the application
// database within a bounded window.
const ConsumerDedup = "consumer-dedup"

func init() {
	Register(Spec{
		Name:  ConsumerDedup,
		Help:  "at-least-once producer with unique keys; the consumer drops keys seen within --dedup-window",
		Order: 80,
		Road:  ApplicationRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.MaxProduceRequestsInflightPerBroker(MaxInFlight)}
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["enable.idempotence"] = "false"
			settings["record.key"] = "unique per record: p<producer>-<sequence>"
			settings["group.id"] = "exactly-<run id>-<run>"
			settings["enable.auto.commit"] = "true, of records marked after their database commit (kgo AutoCommitMarks, every 1s)"
			settings["dedup.window"] = fmt.Sprintf("the keys of the last %d offsets of each partition; a copy arriving later than that is not detected (counted as unprotected)",
				run.DedupWindow)
			settings["consumer.workers"] = strconv.Itoa(run.StageWorkers)
			settings["database"] = run.Database
		},
		UniqueKeys: true,
		Stage:      DedupStage,
		// The input's duplicates are what the consumer must drop: counted,
		// not judged; the table is judged.
		Readers: []Reader{{Isolation: verify.ReadCommitted, Informational: true}},
		// The table must hold every acknowledged record and no copy
		// within the window; it may reorder as its at-least-once input
		// does; copies beyond the window are counted, not bounded. Under
		// group-churn the bounds hold too: a leaving worker rolls its
		// database transaction back, so only records committed to the
		// database but not yet auto-committed to Kafka (about a second's
		// worth) come again, far inside the window, which drops them.
		Expect: Expectation{UnderFaults: Bounds{MayReorder: true},
			Note: "copies beyond the dedup window counted as unprotected"},
		ClientFaults: []faults.ClientActionKind{faults.ClientConsumerCrash, faults.ClientGroupChurn},
	})
}
