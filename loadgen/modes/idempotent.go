package modes

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Idempotent: acks=all, enable.idempotence=true.
const Idempotent = "idempotent"

func init() {
	Register(Spec{
		Name:  Idempotent,
		Help:  "acks=all, enable.idempotence=true",
		Order: 40,
		Road:  BrokerRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
		},
		Settings: func(RunParams, map[string]string) {}, // the defaults
		Readers:  []Reader{{Isolation: verify.ReadCommitted}},
		// The broker drops retries it has written: no loss, no
		// duplicates, no reordering under any fault.
		Expect: Expectation{},
	})
}
