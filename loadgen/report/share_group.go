package report

import (
	"fmt"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// ShareGroupRun is what the consumers of a share-group run saw and what
// the share check made of it; Run.ShareGroup holds it. Added within
// schema version 1.
type ShareGroupRun struct {
	// The checker's figures: deliveries, redeliveries by cause,
	// acceptances, lost, archived, the highest delivery count and the
	// limit (see verify.ShareCounts).
	verify.ShareCounts
	// Consumers is the group's consumer count; ReleaseEvery how often a
	// record is released on its first delivery (1 in ReleaseEvery);
	// LockDurationMillis the acquisition lock the run set.
	Consumers          int   `json:"consumers"`
	ReleaseEvery       int64 `json:"release_every"`
	LockDurationMillis int64 `json:"lock_duration_ms"`
	// ArchivedRecords names the archived records (at most 100).
	ArchivedRecords []string `json:"archived_records,omitempty"`
}

// Describe states the share group's figures in one line.
func (s *ShareGroupRun) Describe() string {
	text := fmt.Sprintf("%d consumers: delivered %d, redelivered %d (released %d, after a crash %d, after churn %d, lock timeout %d), "+
		"accepted %d, accepted twice %d, lost %d, archived %d, max delivery count %d of %d",
		s.Consumers, s.Delivered, s.Redelivered, s.ByRelease, s.ByCrash, s.ByChurn, s.ByLockTimeout,
		s.Accepted, s.DuplicateAccepted, s.Lost, s.Archived, s.MaxDeliveryCount, s.DeliveryLimit)
	if s.AboveLimit > 0 {
		text += fmt.Sprintf(", %d past the limit", s.AboveLimit)
	}
	if s.AfterAccept > 0 {
		text += fmt.Sprintf(", %d delivered again after their acceptance", s.AfterAccept)
	}
	if s.AcceptFailed > 0 {
		text += fmt.Sprintf(", %d acceptances not taken", s.AcceptFailed)
	}
	return text
}
