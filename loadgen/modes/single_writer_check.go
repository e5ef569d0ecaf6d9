package modes

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// SingleWriterCheck: one writer per partition, acks=all, idempotence off,
// no client retries; after a produce error or timeout the writer reads the
// partition's tail to learn which of its records were written and resends
// only the missing ones.
const SingleWriterCheck = "single-writer-check"

// singleWriterDeliveryTimeout is how long a record may wait for its
// acknowledgement before the writer treats it as failed and recovers.
const singleWriterDeliveryTimeout = 10 * time.Second

func init() {
	Register(Spec{
		Name:      SingleWriterCheck,
		Help:      "acks=all, enable.idempotence=false, one writer per partition that reads back the tail after an error",
		Order:     70,
		Road:      ApplicationRoad,
		Producers: PartitionWriters,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			// The application resends; the client must not (a client
			// retry after a lost ack would write a second copy).
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxProduceRequestsInflightPerBroker(MaxInFlight),
				kgo.RecordDeliveryTimeout(singleWriterDeliveryTimeout)}
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["enable.idempotence"], settings["retries"] = "false", "0 (the application resends after reading the partition's tail)"
			settings["writers"] = strconv.Itoa(run.Partitions) + " (one per partition, manual partitioner)"
			settings["delivery.timeout.ms"] = strconv.FormatInt(singleWriterDeliveryTimeout.Milliseconds(), 10)
			settings["recovery"] = "on an error or timeout: flush, ListOffsets, read the partition from the last known-good offset to its end, resend only the records not found"
		},
		Readers: []Reader{{Isolation: verify.ReadCommitted}},
		// A resent record lands after records sent later: order may
		// change, nothing may be lost or written twice.
		Expect: Expectation{UnderFaults: Bounds{MayReorder: true}},
	})
}
