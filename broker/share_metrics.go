package broker

import "github.com/exactly-eos/exactly/broker/share"

// Share group metrics events (exactly_share_records_total{event}).
const (
	shareAcquired     = "acquired"
	shareRedelivered  = "redelivered"
	shareAccepted     = "accepted"
	shareReleased     = "released"
	shareRejected     = "rejected"
	shareArchived     = "archived"
	shareLockTimeouts = "lock_timeout"
)

// countShare counts n records of one share event (no-op without metrics).
func (b *Broker) countShare(event string, n int) {
	if b.metrics != nil && n > 0 {
		b.metrics.ShareRecords(event, n)
	}
}

// countShareAcquired counts acquired ranges: every record, and those
// below delivered (the SPEO before the acquisition: records acquired
// before) as redelivered.
func (b *Broker) countShareAcquired(acquired []share.AcquiredRecords, delivered int64) {
	for _, a := range acquired {
		b.countShare(shareAcquired, int(a.Last-a.First+1))
		if a.First < delivered {
			b.countShare(shareRedelivered, int(min(a.Last, delivered-1)-a.First+1))
		}
	}
}

// countShareAcks counts one acknowledgement's outcome.
func (b *Broker) countShareAcks(counts share.AckCounts) {
	b.countShare(shareAccepted, counts.Accepted)
	b.countShare(shareReleased, counts.Released)
	b.countShare(shareRejected, counts.Rejected)
	b.countShare(shareArchived, counts.Archived)
}
