package modes

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// AtMostOnceAcks1: acks=1, no retries, no idempotence.
const AtMostOnceAcks1 = "at-most-once-acks1"

func init() {
	Register(Spec{
		Name:  AtMostOnceAcks1,
		Help:  "acks=1, retries=0, enable.idempotence=false",
		Order: 20,
		Road:  BrokerRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
				kgo.MaxProduceRequestsInflightPerBroker(MaxInFlight)}
		},
		Settings: func(_ RunParams, settings map[string]string) {
			settings["acks"], settings["enable.idempotence"], settings["retries"] = "1", "false", "0"
		},
		Readers: []Reader{{Isolation: verify.ReadCommitted}},
		// As at-most-once: records are not retried, so they may be lost
		// but never written twice.
		Expect: Expectation{UnderFaults: Bounds{MayLose: true, MayReorder: true}},
	})
}
