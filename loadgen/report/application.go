package report

import "fmt"

// ApplicationRun is what the application-level machinery of a run did
// (seed §3.1: single-writer-check, consumer-dedup, external-offsets);
// Run.Application holds it, omitted for the other modes. Added within
// schema version 1.
type ApplicationRun struct {
	// Database describes the application database (kind and location,
	// without credentials); empty for single-writer-check.
	Database string `json:"database,omitempty"`
	// Table is where the stage's output rows are, for the table check.
	Table string `json:"table,omitempty"`
	// DedupWindowOffsets is consumer-dedup's window: the keys of the last
	// this many offsets of each partition. A copy arriving later than that
	// after its first copy is not detected; the table check counts such
	// copies as unprotected, not as duplicated.
	DedupWindowOffsets int64 `json:"dedup_window_offsets,omitempty"`
	// InputDuplicates counts extra copies in the input topic (what the
	// at-least-once producer wrote twice): what the dedup consumer had to
	// drop.
	InputDuplicates uint64 `json:"input_duplicates"`
	// DroppedDuplicates counts records the dedup consumer dropped because
	// their key was in its window (redeliveries included).
	DroppedDuplicates int64 `json:"dropped_duplicates"`
	// Unprotected counts copies delivered beyond the dedup window.
	Unprotected uint64 `json:"unprotected"`
	// DatabaseCommits counts the stage's database transactions.
	DatabaseCommits int64 `json:"database_commits"`
	// Seeks counts assignments after which the external-offsets stage
	// moved to the offsets stored in the database.
	Seeks int64 `json:"seeks"`
	// OffsetConflicts counts polls dropped because the stored offsets had
	// moved under the worker (another owner of the partition).
	OffsetConflicts int64 `json:"offset_conflicts"`
	// Recoveries counts single-writer recoveries (after a produce error or
	// timeout); FoundWritten the failed records a recovery found written
	// (the acknowledgement was lost), Resent those it sent again (the
	// request was lost), WriterCopies the records a recovery found twice
	// in the partition's tail (0 when the method holds).
	Recoveries   int64 `json:"recoveries"`
	FoundWritten int64 `json:"found_written"`
	Resent       int64 `json:"resent"`
	WriterCopies int64 `json:"writer_copies"`
}

// Describe states in one line what the application-level machinery did.
func (a *ApplicationRun) Describe() string {
	switch {
	case a.Database == "":
		return fmt.Sprintf("single writers: %d recoveries, %d failed records found written, %d resent, %d copies found",
			a.Recoveries, a.FoundWritten, a.Resent, a.WriterCopies)
	case a.DedupWindowOffsets > 0:
		return fmt.Sprintf("dedup window %d offsets/partition: %d input copies, %d dropped, %d unprotected; %s",
			a.DedupWindowOffsets, a.InputDuplicates, a.DroppedDuplicates, a.Unprotected, a.Database)
	}
	return fmt.Sprintf("offsets in the database: %d seeks on assignment, %d offset conflicts; %s", a.Seeks, a.OffsetConflicts, a.Database)
}
