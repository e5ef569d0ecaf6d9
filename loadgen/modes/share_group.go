package modes

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// ShareGroup: idempotent producers; a share group (KIP-932, queues for
// Kafka) consumes: the broker hands each record to one consumer for a
// lock period, the consumer accepts it record by record (a small share
// is first released, to be delivered again), and a record released, whose
// lock ran out or whose consumer crashed or left is delivered again, up to
// the group's delivery limit.
const ShareGroup = "share-group"

func init() {
	Register(Spec{
		Name: ShareGroup,
		Help: "idempotent producers; a share group of consumers (KIP-932) accepts each record explicitly, " +
			"releasing 1 in --share-release-every on first delivery",
		Order: 95,
		Road:  BrokerRoad,
		ProducerOptions: func(ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())} // idempotent, as the idempotent mode
		},
		Settings: func(run RunParams, settings map[string]string) {
			settings["group.type"] = "share (KIP-932): ShareGroupHeartbeat, ShareFetch, ShareAcknowledge"
			settings["share.consumers"] = strconv.Itoa(run.StageWorkers)
			settings["share.acknowledgement.mode"] = "explicit: each record accepted, or released on its first delivery " +
				fmt.Sprintf("(1 in %d, by sequence), acknowledgements flushed after each poll", run.ShareReleaseEvery)
			settings["share.auto.offset.reset"] = "earliest (group config)"
			settings["share.record.lock.duration.ms"] = fmt.Sprintf("%d (group config)", run.ShareLockDuration.Milliseconds())
			settings["share.delivery.count.limit"] = fmt.Sprintf("%d (group config)", run.ShareDeliveryLimit)
			delete(settings, "isolation.level")
		},
		Stage: ShareStage,
		// The topic itself, read back in order: the idempotent producers
		// wrote each acknowledged record once.
		Readers: []Reader{{Isolation: verify.ReadCommitted}},
		// The share check: each acknowledged record accepted exactly once
		// (redeliveries are counted, not bounded), never delivered past
		// the limit, archived records named; share groups do not keep
		// order, so the share check does not judge it.
		Expect:       Expectation{UnderFaults: Bounds{}, Note: "redeliveries counted by cause; a second acceptance, a delivery past the limit fail"},
		ClientFaults: []faults.ClientActionKind{faults.ClientConsumerCrash, faults.ClientGroupChurn},
	})
}
