package quorum

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Producer-id blocks: Kafka's AllocateProducerIds (KIP-730). The image
// holds the next producer id to hand out; a broker asks the controller
// for a block with its id and broker epoch, and the state machine answers
// [next, next+ProducerIDBlockSize) and advances next past it in the same
// log entry. The block is durable once the entry is committed, and no
// later entry can hand out any id of it: not after a controller failover
// (the new controller has applied the entry before it is active), nor
// after a restart from a snapshot (next is in it). A block whose answer
// was lost (the RPC failed after the commit, the broker restarted before
// using it) is skipped, never handed out again.
//
// # The invariant
//
// Every block the state machine hands out is disjoint from every block
// handed out before it, and from every id a broker handed out under the
// earlier, file-based scheme. That scheme — every broker reserved blocks
// of 1000 in its own producer-ids file (s a multiple of 1000) and mapped
// its local block [s, s+1000) to [s*1024 + n*1000, ...+1000), n its node
// id in 0..1023 — gave broker n the global blocks j*1000 with
// j%1024 == n ("stripe n"), and every id it gave is below end*1024, end
// the local file's end.
// Three rules keep the invariant:
//
//  1. A block starts at or above next, and next moves past it in the same
//     entry: the controller's blocks never overlap one another.
//  2. A request carries the broker's floor, end*1024 for the producer-ids
//     file left in its data directory (0 without one), and next becomes at
//     least the floor (rounded up to a whole block) before the block is
//     chosen. After its first request is applied, every later block is
//     above every id that broker's file let it hand out; the broker is
//     then counted in producerIDState.reported.
//  3. Until then, a registered broker with an id in 0..1023 may hold ids
//     of its stripe anywhere below its unknown floor (another broker's
//     floor does not cover it: each file counts only its own broker's
//     blocks), so a block of its stripe is skipped. Registrations are
//     never removed from the image (a command that removes one must keep
//     this), so every broker that ran the earlier scheme as a member of
//     this quorum is such a broker until it reports. A broker that never
//     asks costs 1/1024 of the id space.
//
// Rule 3 counts on the broker having run under its node id and being
// registered. A broker of the earlier scheme registered as it started;
// only one that handed out ids in its first moments, before its first
// registration, and never came back escapes it. Upgrading to this command
// is a whole-cluster restart: a node of the earlier version ignores the
// command as malformed, and its snapshots would lose next.
type producerIDState struct {
	// next is the first id never handed out (a multiple of
	// ProducerIDBlockSize; 0 in a new quorum).
	next int64
	// reported holds the brokers whose request (and with it their floor)
	// has been applied; only true values. Shared between images:
	// replaced, never written.
	reported map[int32]bool
}

// ProducerIDBlockSize is the size of every producer-id block the
// controller hands out (Kafka's ProducerIdsBlock size).
const ProducerIDBlockSize = 1000

// The command type and the request op (commands.go, rpc.go).
const (
	typeAllocateProducerIDs       = "allocate_producer_ids"
	opAllocateProducerIDs   rpcOp = "allocate_producer_ids"
)

// legacyStripes is the stride of the earlier scheme: broker n's blocks
// were the blocks j with j%legacyStripes == n, n in 0..legacyStripes-1.
const legacyStripes = 1024

// LegacyProducerIDFloor is the floor of a broker whose producer-ids file
// (the earlier scheme) has reserved every local id below localEnd: every
// id any broker's stripe got from such a file is below it. It fails if
// the result does not fit an int64, which the earlier scheme refused to
// reach.
func LegacyProducerIDFloor(localEnd int64) (int64, error) {
	if localEnd < 0 || localEnd > math.MaxInt64/legacyStripes {
		return 0, fmt.Errorf("quorum: producer-ids file end %d out of range", localEnd)
	}
	return localEnd * legacyStripes, nil
}

// allocatePIDsCmd (allocate_producer_ids) asks for a block of producer
// ids for broker BrokerID of epoch BrokerEpoch (Kafka's
// AllocateProducerIdsRequest), with the broker's floor (rule 2 above).
type allocatePIDsCmd struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
	Floor       int64 `json:"floor,omitempty"`
}

// applyAllocatePIDs checks the broker and its epoch — a broker that has
// registered again since (a restarted one) is refused with
// ErrStaleBrokerEpoch, as Kafka's controller refuses it, and one that never
// registered with ErrUnknownBroker — and hands out the next block.
func applyAllocatePIDs(next *Image, c allocatePIDsCmd) (bool, applyResult) {
	b, ok := next.brokers[c.BrokerID]
	if !ok {
		return false, applyResult{err: fmt.Errorf("%w: producer ids for broker %d", ErrUnknownBroker, c.BrokerID)}
	}
	if b.Epoch != c.BrokerEpoch {
		return false, applyResult{err: fmt.Errorf("%w: producer ids for broker %d epoch %d, current %d", ErrStaleBrokerEpoch, c.BrokerID, c.BrokerEpoch, b.Epoch)}
	}
	if c.Floor < 0 {
		return false, applyResult{err: fmt.Errorf("%w: producer ids for broker %d with floor %d", ErrInvalidRequest, c.BrokerID, c.Floor)}
	}
	start, ok := roundUpBlock(max(next.producerIDs.next, c.Floor))
	reported := next.producerIDs.reported
	if !reported[c.BrokerID] {
		reported = maps.Clone(reported)
		if reported == nil {
			reported = map[int32]bool{}
		}
		reported[c.BrokerID] = true
	}
	// Rule 3. At most legacyStripes-1 stripes are held (not the asking
	// broker's), so this ends within legacyStripes blocks.
	for ok && legacyStripeHeld(next, reported, start) {
		if start > math.MaxInt64-2*ProducerIDBlockSize {
			ok = false
			break
		}
		start += ProducerIDBlockSize
	}
	if !ok || start > math.MaxInt64-ProducerIDBlockSize {
		return false, applyResult{err: fmt.Errorf("%w: for broker %d", ErrProducerIDsExhausted, c.BrokerID)}
	}
	next.producerIDs = producerIDState{next: start + ProducerIDBlockSize, reported: reported}
	return true, applyResult{pidStart: start}
}

// roundUpBlock rounds id up to a multiple of ProducerIDBlockSize; false if
// that overflows.
func roundUpBlock(id int64) (int64, bool) {
	rem := id % ProducerIDBlockSize
	if rem == 0 {
		return id, true
	}
	if id > math.MaxInt64-(ProducerIDBlockSize-rem) {
		return 0, false
	}
	return id + ProducerIDBlockSize - rem, true
}

// legacyStripeHeld reports whether the block at start (a multiple of
// ProducerIDBlockSize) is in the stripe of a registered broker that has
// not reported its floor yet (rule 3).
func legacyStripeHeld(img *Image, reported map[int32]bool, start int64) bool {
	stripe := int32(start / ProducerIDBlockSize % legacyStripes)
	_, registered := img.brokers[stripe]
	return registered && !reported[stripe]
}

// NextProducerID returns the first producer id the controller has not
// handed out (the start of the next block, unless a floor or rule 3 of
// producerIDState moves it).
func (img *Image) NextProducerID() int64 { return img.producerIDs.next }

// sameProducerIDs reports whether two images hold the same producer-id
// state.
func sameProducerIDs(a, b producerIDState) bool {
	return a.next == b.next && maps.Equal(a.reported, b.reported)
}

// reportedBrokers returns the reported brokers in ascending order (the
// snapshot's form).
func (s producerIDState) reportedBrokers() []int32 {
	return slices.Sorted(maps.Keys(s.reported))
}

// AllocateProducerIDs asks the active controller (forwarded like every
// request) for a block of ProducerIDBlockSize producer ids for broker
// brokerID, whose current registration has epoch brokerEpoch, and returns
// its first id: the block [start, start+ProducerIDBlockSize) is durable
// and no broker gets any of its ids again. floor is the broker's
// LegacyProducerIDFloor (0 if its data directory has no producer-ids
// file): the block starts at or above it. It fails with ErrUnknownBroker
// or ErrStaleBrokerEpoch when brokerEpoch is not the broker's current
// registration. A retry inside (a lost answer) may skip a block; it never
// hands one out twice.
func (n *Node) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64, floor int64) (int64, error) {
	cmd := allocatePIDsCmd{BrokerID: brokerID, BrokerEpoch: brokerEpoch, Floor: floor}
	resp, err := n.submit(ctx, rpcRequest{Op: opAllocateProducerIDs, ProducerIDs: &cmd})
	if err != nil {
		return 0, err
	}
	return resp.PIDStart, nil
}
