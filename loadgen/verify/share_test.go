package verify

import (
	"strings"
	"testing"
	"time"
)

// shareFixture is a ledger of one producer that sent and got an
// acknowledgement for records 0..n-1, and an empty share log.
func shareFixture(t *testing.T, n uint64) (*Ledger, *ShareLog) {
	t.Helper()
	ledger := NewLedger(7, 1)
	producer := ledger.Producer(0)
	for seq := range n {
		if err := producer.RecordSent(seq, FateCommit); err != nil {
			t.Fatal(err)
		}
		producer.RecordAcknowledged(seq, Ack{Partition: 0, Offset: int64(seq)})
	}
	return ledger, NewShareLog(7)
}

// deliver records a delivery of record seq to consumer with the broker's
// delivery count, and what the consumer did with it.
func deliver(log *ShareLog, consumer string, seq uint64, count int32, at time.Time, action ShareAction, failed bool) {
	value := NewValue(Header{RunID: 7, Producer: 0, Sequence: seq}, HeaderSize)
	handle, _, ok := log.Delivered(consumer, 0, int64(seq), value, count, at)
	if !ok {
		panic("not this run's record")
	}
	if action != ShareHeld {
		log.Acknowledged(handle, action, failed)
	}
}

// A clean run: each record accepted once; one released and accepted on
// its redelivery; one held by a consumer that crashed and accepted by
// another (once at a higher count, once at the same count: the broker
// does not count an acquisition a session's end gave back); one
// redelivered with nothing to explain it but the lock.
func TestShareCheckClean(t *testing.T) {
	ledger, log := shareFixture(t, 6)
	start := time.Unix(100, 0)
	deliver(log, "w0", 0, 1, start, ShareAccepted, false)
	deliver(log, "w0", 1, 1, start, ShareReleased, false)
	deliver(log, "w1", 1, 2, start.Add(time.Second), ShareAccepted, false)
	deliver(log, "w1", 2, 1, start, ShareHeld, false)
	deliver(log, "w1", 5, 1, start, ShareHeld, false)
	log.Departed("w1", true, start.Add(time.Second))
	deliver(log, "w0", 5, 1, start.Add(2*time.Second), ShareAccepted, false)
	deliver(log, "w0", 2, 2, start.Add(2*time.Second), ShareAccepted, false)
	deliver(log, "w0", 3, 1, start, ShareAccepted, true) // the broker did not take it
	deliver(log, "w0", 3, 2, start.Add(3*time.Second), ShareAccepted, false)
	deliver(log, "w0", 4, 1, start, ShareAccepted, false)
	counts, offenders := CheckShare(ledger, log, 5)
	want := ShareCounts{Delivered: 10, Records: 6, Redelivered: 4, ByRelease: 1, ByCrash: 2, ByLockTimeout: 1, Released: 1,
		Accepted: 6, AcceptFailed: 1, MaxDeliveryCount: 2, DeliveryLimit: 5}
	if counts != want {
		t.Errorf("counts\n got %+v\nwant %+v", counts, want)
	}
	if failures := counts.Failures(); failures != nil || len(offenders) != 0 {
		t.Errorf("failures %v, offenders %v", failures, offenders)
	}
}

// Each broken promise fails the check and names its record: a second
// acceptance the broker took, a record acknowledged to its producer but
// never accepted, a delivery count over the limit.
func TestShareCheckFailures(t *testing.T) {
	start := time.Unix(100, 0)
	t.Run("duplicate acceptance", func(t *testing.T) {
		ledger, log := shareFixture(t, 1)
		deliver(log, "w0", 0, 1, start, ShareAccepted, false)
		deliver(log, "w1", 0, 2, start.Add(time.Second), ShareAccepted, false)
		counts, offenders := CheckShare(ledger, log, 5)
		if counts.DuplicateAccepted != 1 || counts.AfterAccept != 1 || len(offenders[OffenderDuplicateAccepted]) != 1 ||
			!strings.Contains(strings.Join(counts.Failures(), "; "), "1 "+ViolationDuplicateAccepted) {
			t.Errorf("duplicate acceptance not failed: %+v %v %v", counts, counts.Failures(), offenders)
		}
	})
	t.Run("lost", func(t *testing.T) {
		ledger, log := shareFixture(t, 3)
		deliver(log, "w0", 0, 1, start, ShareAccepted, false)
		deliver(log, "w0", 1, 1, start, ShareReleased, false) // released, never delivered again
		counts, offenders := CheckShare(ledger, log, 5)
		if counts.Lost != 2 || len(offenders[OffenderShareLost]) != 2 || counts.Failures()[0] != "2 "+ViolationLost ||
			!strings.Contains(strings.Join(offenders[OffenderShareLost], "\n"), "seq 2: acknowledged to its producer, never delivered") {
			t.Errorf("lost records not failed: %+v %v %v", counts, counts.Failures(), offenders)
		}
	})
	t.Run("above the limit", func(t *testing.T) {
		ledger, log := shareFixture(t, 1)
		for count := int32(1); count <= 3; count++ {
			deliver(log, "w0", 0, count, start.Add(time.Duration(count)*time.Second), ShareReleased, false)
		}
		deliver(log, "w0", 0, 4, start.Add(4*time.Second), ShareAccepted, false)
		counts, offenders := CheckShare(ledger, log, 3)
		if counts.AboveLimit != 1 || counts.MaxDeliveryCount != 4 || len(offenders[OffenderAboveLimit]) != 1 ||
			counts.Failures()[0] != "1 "+ViolationAboveLimit {
			t.Errorf("delivery over the limit not failed: %+v %v", counts, counts.Failures())
		}
	})
}

// A record released at the limit is archived: named, not lost.
func TestShareCheckArchived(t *testing.T) {
	ledger, log := shareFixture(t, 1)
	start := time.Unix(100, 0)
	for count := int32(1); count <= 3; count++ {
		deliver(log, "w0", 0, count, start.Add(time.Duration(count)*time.Second), ShareReleased, false)
	}
	counts, offenders := CheckShare(ledger, log, 3)
	if counts.Archived != 1 || counts.Lost != 0 || counts.Failures() != nil || len(offenders[OffenderArchived]) != 1 ||
		!strings.HasPrefix(offenders[OffenderArchived][0], "producer 0 seq 0: partition 0 offset 0 delivery 1 to w0 released") {
		t.Errorf("archived: %+v %v", counts, offenders)
	}
}
