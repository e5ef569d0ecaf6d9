package modes

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// AtLeastOnce: acks=all, retries, no idempotence, 5 in flight. The
// baseline the others are compared with.
const AtLeastOnce = "at-least-once"

func init() {
	Register(Spec{
		Name:     AtLeastOnce,
		Help:     "acks=all, retries, enable.idempotence=false, max.in.flight.requests.per.connection=5",
		Order:    30,
		Road:     BrokerRoad,
		Baseline: true,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.MaxProduceRequestsInflightPerBroker(MaxInFlight)}
		},
		Settings: func(_ RunParams, settings map[string]string) {
			settings["enable.idempotence"] = "false"
		},
		// Under group-churn the classic at-least-once consume-produce
		// loop: its leaving workers' uncommitted polls come again.
		RelaysUnderChurn: true,
		Readers:          []Reader{{Isolation: verify.ReadCommitted}},
		// Retries without idempotence may duplicate and reorder, never
		// lose an acknowledged record; lost acks must show duplicates.
		Expect:       Expectation{UnderFaults: Bounds{MayDuplicate: true, MayReorder: true}, AckLossShowsDuplicates: true},
		ClientFaults: []faults.ClientActionKind{faults.ClientGroupChurn},
	})
}
