package verify

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// The share-group checker. In a share group (KIP-932) the broker hands
// each record to one consumer at a time for a lock period; the consumer
// acknowledges it record by record (accept, release, reject). A released
// record, one whose lock ran out, and one held by a consumer whose session
// ended (a crash, a departure) is delivered again, with the broker's
// delivery count one higher; at the group's delivery limit it is archived
// instead. Deliveries may repeat; acceptances must not.
//
// A ShareLog records, as the run's share consumers report it, every
// delivery (record, consumer, partition, offset, delivery count), what
// the consumer did with it and whether the broker took the
// acknowledgement, and every consumer that crashed or left. CheckShare
// judges it against the producers' Ledger.

// ShareAction is what a share consumer did with a delivered record.
type ShareAction uint8

const (
	// ShareHeld: no acknowledgement (its consumer crashed or left
	// holding it).
	ShareHeld ShareAction = iota
	// ShareAccepted: acknowledged with accept (processed).
	ShareAccepted
	// ShareReleased: acknowledged with release (hand it to someone else).
	ShareReleased
)

// ShareDelivery is one delivery of one record to one consumer.
type ShareDelivery struct {
	Consumer  string
	Partition int32
	Offset    int64
	// Count is the broker's delivery count (1 on the first delivery).
	Count int32
	// At is when the consumer's poll returned it (Unix nanoseconds).
	At     int64
	Action ShareAction
	// AckFailed: the acknowledgement was refused or not answered (the
	// broker did not take it).
	AckFailed bool
}

// ShareHandle names one recorded delivery, for ShareLog.Acknowledged.
type ShareHandle struct {
	id    RecordID
	index int
}

// shareDeparture is a consumer's end: a crash or a departure.
type shareDeparture struct {
	at      int64
	crashed bool
}

// ShareLog is what a run's share consumers saw and did. Safe for
// concurrent use.
type ShareLog struct {
	mu         sync.Mutex
	runID      uint64
	records    map[RecordID][]ShareDelivery
	departures map[string]shareDeparture
	foreign    uint64
}

// NewShareLog returns an empty log of run runID's records.
func NewShareLog(runID uint64) *ShareLog {
	return &ShareLog{runID: runID, records: make(map[RecordID][]ShareDelivery), departures: make(map[string]shareDeparture)}
}

// Delivered records a delivery of value; ok is false for a record that is
// not this run's (counted as foreign, not judged).
func (l *ShareLog) Delivered(consumer string, partition int32, offset int64, value []byte, count int32, at time.Time) (ShareHandle, Header, bool) {
	header, err := DecodeHeader(value)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || header.RunID != l.runID {
		l.foreign++
		return ShareHandle{}, header, false
	}
	id := NewRecordID(header.Producer, header.Sequence)
	l.records[id] = append(l.records[id], ShareDelivery{Consumer: consumer, Partition: partition, Offset: offset, Count: count,
		At: at.UnixNano()})
	return ShareHandle{id: id, index: len(l.records[id]) - 1}, header, true
}

// Acknowledged records what the consumer did with delivery h and whether
// the broker took it. It reports whether this is the record's first
// acceptance the broker took.
func (l *ShareLog) Acknowledged(h ShareHandle, action ShareAction, failed bool) (firstAccept bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deliveries := l.records[h.id]
	if h.index >= len(deliveries) {
		return false
	}
	deliveries[h.index].Action, deliveries[h.index].AckFailed = action, failed
	if action != ShareAccepted || failed {
		return false
	}
	for i, delivery := range deliveries {
		if i != h.index && delivery.Action == ShareAccepted && !delivery.AckFailed {
			return false
		}
	}
	return true
}

// Departed records that consumer crashed (or left the group, crashed
// false) at at, holding whatever it had not acknowledged.
func (l *ShareLog) Departed(consumer string, crashed bool, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.departures[consumer] = shareDeparture{at: at.UnixNano(), crashed: crashed}
}

// ShareCounts is the share-group verdict of a run.
type ShareCounts struct {
	// Delivered counts deliveries the consumers saw; Records the
	// distinct records among them.
	Delivered uint64 `json:"delivered"`
	Records   uint64 `json:"records"`
	// Redelivered counts deliveries of a record a consumer saw before,
	// or whose delivery count says an earlier attempt reached no
	// application, by cause: the previous delivery was released by our
	// consumer (ByRelease), its consumer crashed (ByCrash) or left the
	// group (ByChurn) holding it, or none of these (ByLockTimeout:
	// inferred, the lock ran out or the broker took the record back on
	// its own).
	Redelivered   uint64 `json:"redelivered"`
	ByRelease     uint64 `json:"redelivered_after_release"`
	ByCrash       uint64 `json:"redelivered_after_crash"`
	ByChurn       uint64 `json:"redelivered_after_churn"`
	ByLockTimeout uint64 `json:"redelivered_after_lock_timeout"`
	// Released counts the releases the broker took.
	Released uint64 `json:"released"`
	// Accepted counts distinct records with an acceptance the broker
	// took; AcceptFailed acceptances it refused or did not answer.
	Accepted     uint64 `json:"accepted"`
	AcceptFailed uint64 `json:"accept_failed"`
	// DuplicateAccepted counts extra acceptances the broker took of a
	// record already accepted (a record accepted 3 times adds 2): a
	// failure.
	DuplicateAccepted uint64 `json:"duplicate_accepted"`
	// AfterAccept counts deliveries of a record whose previous delivery
	// was accepted and the acceptance taken: the broker must never deliver
	// an accepted record again (a failure).
	AfterAccept uint64 `json:"redelivered_after_accept"`
	// Lost counts records the producers got an acknowledgement for that
	// were never accepted and not archived: a failure.
	Lost uint64 `json:"lost"`
	// Archived counts records never accepted whose last delivery reached
	// the delivery limit: the broker archives them (named in Offenders).
	Archived uint64 `json:"archived"`
	// MaxDeliveryCount is the highest delivery count seen; AboveLimit
	// counts deliveries whose count exceeded the limit (a failure).
	MaxDeliveryCount int32  `json:"max_delivery_count"`
	DeliveryLimit    int32  `json:"delivery_limit"`
	AboveLimit       uint64 `json:"above_limit"`
	// Phantom counts delivered records of this run no producer sent;
	// Foreign records of other runs (ignored).
	Phantom uint64 `json:"phantom"`
	Foreign uint64 `json:"foreign"`
}

// Failures lists the counts that break the share group's promise, each
// "<count> <what>"; nil when none does.
func (c ShareCounts) Failures() []string {
	var failures []string
	add := func(n uint64, what string) {
		if n > 0 {
			failures = append(failures, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.Lost, ViolationLost)
	add(c.DuplicateAccepted, ViolationDuplicateAccepted)
	add(c.AfterAccept, ViolationAfterAccept)
	add(c.AboveLimit, ViolationAboveLimit)
	add(c.Phantom, ViolationPhantom)
	return failures
}

// The share-group violation names.
const (
	ViolationDuplicateAccepted = "accepted more than once"
	ViolationAfterAccept       = "delivered again after an acceptance the broker took"
	ViolationAboveLimit        = "delivered beyond the delivery limit"
)

// Share-group offender kinds (see OffenderSampler's kinds).
const (
	OffenderShareLost          = "share-lost"
	OffenderDuplicateAccepted  = "duplicate-accepted"
	OffenderAfterAccept        = "redelivered-after-accept"
	OffenderAboveLimit         = "above-delivery-limit"
	OffenderArchived           = "archived"
	maxArchivedNamed           = 100
	shareOffenderDeliveryLimit = 4
)

// CheckShare judges log against the producers' ledger, with the group's
// delivery limit. The producers must have finished and the consumers
// stopped. offenders names up to MaxOffenders records of each failing
// kind, and up to 100 archived records.
func CheckShare(ledger *Ledger, log *ShareLog, limit int32) (counts ShareCounts, offenders map[string][]string) {
	log.mu.Lock()
	defer log.mu.Unlock()
	counts.DeliveryLimit, counts.Foreign = limit, log.foreign
	offenders = make(map[string][]string)
	name := func(kind string, id RecordID, deliveries []ShareDelivery, cap int) {
		if len(offenders[kind]) < cap {
			offenders[kind] = append(offenders[kind], describeShareRecord(id, deliveries))
		}
	}
	accepted := make(map[RecordID]bool, len(log.records))
	archived := make(map[RecordID]bool)
	// The latest departure before each time, for deliveries whose
	// previous attempt no consumer of ours saw.
	type departure struct {
		at      int64
		crashed bool
	}
	var departures []departure
	for _, d := range log.departures {
		departures = append(departures, departure{d.at, d.crashed})
	}
	slices.SortFunc(departures, func(a, b departure) int { return compareInt64(a.at, b.at) })
	lastDepartureBefore := func(at int64) (departure, bool) {
		i, _ := slices.BinarySearchFunc(departures, at, func(d departure, t int64) int { return compareInt64(d.at, t) })
		if i == 0 {
			return departure{}, false
		}
		return departures[i-1], true
	}
	for id, deliveries := range log.records {
		counts.Records++
		counts.Delivered += uint64(len(deliveries))
		if !sentBy(ledger, id) {
			counts.Phantom++
			name(OffenderPhantom, id, deliveries, MaxOffenders)
		}
		ordered := slices.Clone(deliveries)
		slices.SortStableFunc(ordered, func(a, b ShareDelivery) int {
			if a.Count != b.Count {
				return int(a.Count - b.Count)
			}
			return compareInt64(a.At, b.At)
		})
		acceptances := uint64(0)
		for i, delivery := range ordered {
			counts.MaxDeliveryCount = max(counts.MaxDeliveryCount, delivery.Count)
			if delivery.Count > limit {
				counts.AboveLimit++
				name(OffenderAboveLimit, id, deliveries, MaxOffenders)
			}
			switch {
			case delivery.Action == ShareAccepted && delivery.AckFailed:
				counts.AcceptFailed++
			case delivery.Action == ShareAccepted:
				acceptances++
			case delivery.Action == ShareReleased && !delivery.AckFailed:
				counts.Released++
			}
			if i > 0 && ordered[i-1].Action == ShareAccepted && !ordered[i-1].AckFailed {
				counts.AfterAccept++
				name(OffenderAfterAccept, id, deliveries, MaxOffenders)
			}
			// A delivery is a redelivery when a consumer saw the record
			// before, or its count says an earlier attempt reached no
			// application. A record a session's end gave back (a crash,
			// a departure) comes again with the same count: like Kafka,
			// the broker does not count an acquisition its client never
			// handed out.
			if i == 0 && delivery.Count <= 1 {
				continue
			}
			counts.Redelivered++
			var previous *ShareDelivery
			if i > 0 && (ordered[i-1].Count == delivery.Count-1 || ordered[i-1].Count == delivery.Count) {
				previous = &ordered[i-1]
			}
			switch {
			case previous != nil && previous.Action == ShareReleased && !previous.AckFailed:
				counts.ByRelease++
			case previous != nil && previous.Action == ShareAccepted && !previous.AckFailed:
				// Counted as AfterAccept above: no cause excuses it.
			case previous != nil:
				if gone, ok := log.departures[previous.Consumer]; ok && gone.at >= previous.At {
					if gone.crashed {
						counts.ByCrash++
					} else {
						counts.ByChurn++
					}
				} else {
					counts.ByLockTimeout++
				}
			default:
				// The previous attempt reached a client but not its
				// application (fetched, buffered, then released when the
				// client crashed or left), or no consumer saw it at all.
				if gone, ok := lastDepartureBefore(delivery.At); ok && gone.crashed {
					counts.ByCrash++
				} else if ok {
					counts.ByChurn++
				} else {
					counts.ByLockTimeout++
				}
			}
		}
		if acceptances > 0 {
			counts.Accepted++
			accepted[id] = true
		}
		if acceptances > 1 {
			counts.DuplicateAccepted += acceptances - 1
			name(OffenderDuplicateAccepted, id, deliveries, MaxOffenders)
		}
		if last := ordered[len(ordered)-1]; acceptances == 0 && last.Count >= limit &&
			(last.Action != ShareAccepted || last.AckFailed) {
			counts.Archived++
			archived[id] = true
			name(OffenderArchived, id, deliveries, maxArchivedNamed)
		}
	}
	for producerID, producer := range ledger.producers {
		producer.mu.Lock()
		for seq := range producer.sent {
			id := NewRecordID(uint32(producerID), seq)
			if producer.status(seq) != statusCommitted || accepted[id] || archived[id] {
				continue
			}
			counts.Lost++
			name(OffenderShareLost, id, log.records[id], MaxOffenders)
		}
		producer.mu.Unlock()
	}
	return counts, offenders
}

// sentBy reports whether a producer of ledger sent record id.
func sentBy(ledger *Ledger, id RecordID) bool {
	producer := int(id.Producer())
	return producer < len(ledger.producers) && id.Sequence() < ledger.producers[producer].Sent()
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// describeShareRecord names a record and its first deliveries:
// "producer 0 seq 7: partition 1 offset 3 to w0 (1, accepted), to w1 (2, accepted)".
func describeShareRecord(id RecordID, deliveries []ShareDelivery) string {
	text := fmt.Sprintf("producer %d seq %d", id.Producer(), id.Sequence())
	if len(deliveries) == 0 {
		return text + ": acknowledged to its producer, never delivered"
	}
	text += fmt.Sprintf(": partition %d offset %d", deliveries[0].Partition, deliveries[0].Offset)
	for i, delivery := range deliveries {
		if i == shareOffenderDeliveryLimit {
			text += fmt.Sprintf(", %d more", len(deliveries)-i)
			break
		}
		separator := ", "
		if i == 0 {
			separator = " "
		}
		text += fmt.Sprintf("%sdelivery %d to %s %s", separator, delivery.Count, delivery.Consumer, delivery.outcome())
	}
	return text
}

func (d ShareDelivery) outcome() string {
	what := map[ShareAction]string{ShareHeld: "held, never acknowledged", ShareAccepted: "accepted", ShareReleased: "released"}[d.Action]
	if d.AckFailed {
		what += " (acknowledgement not taken)"
	}
	return what
}
