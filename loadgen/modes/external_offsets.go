package modes

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// ExternalOffsets: idempotent producers feed an input topic; a
// consume-transform stage with auto-commit off writes its output rows and
// its partition offsets in one database transaction and seeks to the
// stored offsets on every assignment.
const ExternalOffsets = "external-offsets"

func init() {
	Register(Spec{
		Name:  ExternalOffsets,
		Help:  "enable.auto.commit=false; results and offsets in one database transaction, seek() on assignment",
		Order: 90,
		Road:  ApplicationRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["group.id"] = "exactly-<run id>-<run>"
			settings["enable.auto.commit"] = "false (offsets live in the database, never committed to Kafka)"
			settings["commit"] = "one database transaction per poll: output rows + offsets (compare-and-set)"
			settings["seek"] = "on every assignment, to the offsets stored in the database (kgo AdjustFetchOffsetsFn)"
			settings["consumer.workers"] = strconv.Itoa(run.StageWorkers)
			settings["database"] = run.Database
			settings["input producers"] = "idempotent"
		},
		Stage:   StoredOffsetsStage,
		Readers: []Reader{{Isolation: verify.ReadCommitted}},
		// The table must hold every input record exactly once, in order.
		Expect:       Expectation{},
		ClientFaults: []faults.ClientActionKind{faults.ClientConsumerCrash, faults.ClientGroupChurn},
	})
}
