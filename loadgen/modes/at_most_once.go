package modes

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// AtMostOnce: acks=0, no retries, no idempotence.
const AtMostOnce = "at-most-once"

func init() {
	Register(Spec{
		Name:  AtMostOnce,
		Help:  "acks=0, enable.idempotence=false",
		Order: 10,
		Road:  BrokerRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
				kgo.MaxProduceRequestsInflightPerBroker(MaxInFlight)}
		},
		Settings: func(_ RunParams, settings map[string]string) {
			settings["acks"], settings["enable.idempotence"], settings["retries"] = "0", "false", "0"
		},
		Readers: []Reader{{Isolation: verify.ReadCommitted}},
		// Records are not retried: a lost request loses them, and
		// nothing is ever sent twice.
		Expect: Expectation{UnderFaults: Bounds{MayLose: true, MayReorder: true}},
	})
}
