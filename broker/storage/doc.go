// Package storage is the segmented partition log: record batches stored
// exactly as the wire carries them, as in Kafka's log. It is a pure library —
// no network — and reaches the disk through the FS interface, so tests can
// fail the n-th write or sync and simulate a crash that loses unsynced writes
// (FaultFS).
//
// # Concurrency
//
// One Clean at a time; it holds the lock retention and truncation take
// for removing files throughout, and the append lock only to capture the
// segments and to publish each cleaned one.
// One appender at a time (Append, Roll, Flush, Truncate, ApplyRetention,
// DeleteRecordsBefore, AppendAbortedTxn, SyncAbortedTxns, Close serialize
// on a mutex) and any
// number of concurrent readers (Read, ReadBatches, ScanHeaders,
// OffsetForTimestamp, AbortedTxns). The appender writes bytes with pwrite
// beyond the published end of the active segment, then publishes the new end
// under a short write lock; readers only look below the published end, so
// they never see a partial batch. Regions returned by Read hold a reference
// on their file, which stays open (and readable, even unlinked) until
// Release. Read holds the read lock only to capture the segments (and a
// reference on each file); it reads the batch headers after releasing it,
// and retries if a truncation overlapped. Disk I/O kept off the append
// lock: retention's file removal, the background sync of rolled segments
// with its index files and checkpoint (fsync never), and the bulk of the
// 64 MiB flush's fsync (interval/always). Log's doc lists the locks, their
// order and the I/O still under the append lock.
//
// # Directory layout
//
//	<dir>/00000000000000000000.log        segment: raw batches back to back
//	<dir>/00000000000000000000.index      sparse offset index of that segment
//	<dir>/00000000000000000000.timeindex  sparse time index
//	<dir>/00000000000000000000.txnindex   aborted transactions (optional)
//	<dir>/checkpoint                      log start offset and recovery point
//	<dir>/.clean-shutdown                 present only after a clean Close
//
//	<dir>/cleaner-offset-checkpoint       first dirty offset and compacted end (Compaction)
//	<dir>/<base>.<suffix>.cleaned         a cleaned segment being written
//	<dir>/<base>.swap                     a committed, unfinished swap of cleaned segments
//
// A segment is named by its base offset, 20 decimal digits: the offset of
// its first batch when it was created. Segments are contiguous as offset
// ranges: each one's range starts where the previous one's ends (its end is
// the next segment's base; the active segment's is the log end). Batches
// inside a range are contiguous too, except below the compacted end, where
// compaction leaves gaps: there a batch's base offset is only larger than
// the previous batch's last offset, a segment may end with a gap or hold
// no batch at all, and a read from a removed offset returns the next batch.
// A follower's AppendReplica (a replica of a compacted leader) keeps the
// leader's offsets and may leave such a gap at the end too: it first
// raises the compacted end (cleaner-offset-checkpoint) to the batch's base.
// The newest segment is the active one.
// A segment rolls when an append would make it exceed SegmentBytes, when it
// is older than SegmentAge (counted from its first batch's max timestamp),
// or when a relative offset would not fit 31 bits.
//
// All integers are big-endian.
//
// # .log
//
// Record batches v2 exactly as received, with the base offset patched by the
// log (bytes 0..7 of each batch); see [github.com/exactly-eos/exactly/wire.BatchView]:
//
//	offset  size  field
//	     0     8  base offset            (assigned by Append; not covered by the CRC)
//	     8     4  batch length           (bytes after this field)
//	    12     4  partition leader epoch (not covered by the CRC)
//	    16     1  magic = 2
//	    17     4  CRC-32C (Castagnoli) of bytes [21, end)
//	    21     2  attributes
//	    23     4  last offset delta
//	    27     8  base timestamp
//	    35     8  max timestamp
//	    43     8  producer id
//	    51     2  producer epoch
//	    53     4  base sequence
//	    57     4  record count
//	    61     …  records
//
// # .index
//
// Entries of 8 bytes, in increasing order of both fields:
//
//	0  4  relative offset: a batch's base offset minus the segment's base offset
//	4  4  position: the byte position of that batch in the .log file
//
// One entry is added for the first batch that starts at least
// IndexIntervalBytes after the previous entry's batch (the batch at position 0
// has none: it is implicit). A lookup of offset o takes the last entry whose
// relative offset <= o - base and scans batch headers forward from there. The
// entries of the active segment are kept in memory and written at sync
// points (roll, Flush, Close, and every 64 MiB with fsync interval/always);
// sealed segments' entries are read lazily on first use.
//
// # .timeindex
//
// Entries of 12 bytes, timestamps strictly increasing:
//
//	0  8  timestamp: the largest batch max timestamp of the segment so far
//	8  4  relative offset of the batch at which that maximum was reached
//
// An entry (T, r) means every batch up to and including the one at r has a
// max timestamp <= T. Entries are added with offset index entries when the
// maximum grew, plus one for the last batch when the segment is sealed (roll
// or Close), so the last entry holds the segment's max timestamp, used by
// time retention. OffsetForTimestamp(ts) skips to the batch of the last entry
// with T < ts and scans headers for the first batch whose max timestamp >=
// ts; it answers with that batch's base offset (payloads are not parsed).
//
// # .txnindex
//
// Aborted transactions whose abort marker is in this segment, 38 bytes each:
//
//	 0  2  version = 0
//	 2  8  producer id
//	10  8  first offset of the transaction's data
//	18  8  last offset (the abort marker)
//	26  8  last stable offset when it was aborted
//	34  4  CRC-32C of bytes [0, 34)
//
// Written by AppendAbortedTxn, without a sync of its own, to the file kept
// open while the segment is active (created on the segment's first entry,
// with a directory sync; closed when the segment rolls). It is synced with
// its segment and always before the segment's data, so that a crash may
// leave an entry whose marker is lost, never the reverse among synced
// bytes: by the WaitDurable sync that covers the marker (fsync always) or
// by the periodic one (interval) — WaitDurable of an offset at or past a
// marker returns only once a sync that started after the entry was written
// returned —; at roll, inline with every fsync policy (fsync never
// included: a caller may snapshot state at the new segment's base); by
// Flush, Close, truncation and SyncAbortedTxns. With fsync never an entry
// written since the last of those is in the page cache only, like the
// segment's tail, and a crash may keep its marker (written back by the OS)
// and lose it: the caller must replay the markers after its last snapshot
// to restore such entries, and sync the index (SyncAbortedTxns) before
// taking a snapshot that is not at a roll.
//
// On open the file is read whole; a torn or corrupt entry and everything
// after it is dropped, as are entries at or beyond the recovered log end,
// and if any was dropped the file is rewritten with the rest and synced
// (the offset of a lost marker is reused by the next append). Truncation
// rewrites it.
//
// # checkpoint
//
// 42 bytes, written to "checkpoint.tmp", synced, renamed over "checkpoint",
// directory synced — so it is either the old or the new one:
//
//	 0  4  magic "EXCK"
//	 4  2  version = 1
//	 6  8  log start offset
//	14  8  recovery segment: base offset of the segment holding the recovery point
//	22  8  recovery position: byte position of the recovery point in it
//	30  8  recovery offset: the offset of the batch starting there
//	38  4  CRC-32C of bytes [0, 38)
//
// The recovery point promises that every segment before the recovery
// segment, and the recovery segment's first `position` bytes, were synced
// together with their index files. It moves at roll (inline with fsync
// interval/always; after the background sync of the rolled segment with
// fsync never), Flush, Close, truncation, and every 64 MiB appended with
// fsync interval/always. The log start offset moves with retention and
// DeleteRecordsBefore; a recovered log start offset beyond the recovered end
// restarts the log empty at the log start offset, so no deleted offset is
// ever reused.
//
// # .clean-shutdown
//
// An empty file, created (atomically, synced) by Close after everything was
// flushed and removed by Open before anything is written.
//
// # Recovery
//
// With the clean-shutdown marker, Open trusts every index: it reads the last
// entry of each sealed segment's indexes (cheap sanity check) and the headers
// after the active segment's last index entry, to find the log end. Nothing
// is rescanned.
//
// Without it (a crash), Open rescans only from the recovery point: the
// recovery segment from the recovery position (its index entries before it
// are trusted) and every later segment whole. Earlier segments get the cheap
// index check only. Each batch is validated in order — header complete,
// batch length within the file, magic 2, CRC-32C, base offset equal to the
// previous batch's last offset + 1 (the only check of the unprotected base
// offset field; below the compacted end only larger) — and the log is truncated at the first batch that fails,
// torn or corrupt: the segment file is cut at that batch and every later
// segment deleted; RecoveryReport says where and why. A corrupt byte in the
// partition leader epoch field, which nothing covers, goes unnoticed. The
// indexes of the rescanned segments are rebuilt from the batches, and a new
// recovery point is written at the recovered end.
//
// An index that fails the cheap check — missing, not a whole number of
// entries, last entry outside the segment or not pointing at a batch with
// the right base offset — is rebuilt from the segment's batch headers; a
// sealed segment whose batches do not parse is reported as an error (it was
// synced, so that is disk corruption, not a torn write). Indexes only speed
// lookups up: an index loaded lazily that is not strictly increasing and
// inside its segment is ignored, and lookups scan from the segment start.
//
// # Compaction
//
// [Log.Clean] (Kafka's log cleaner) rewrites the sealed segments
// below the cleanable end — the first segment that is active, at or past
// the recovery point (so recovery never rescans a cleaned segment), holds
// an offset at or past the caller's upper bound (the last stable offset),
// or is dirty and younger than the minimum compaction lag. An offset map
// (key hash → latest offset) is built from the dirty section [first dirty
// offset, cleanable end), aborted data excluded; then every cleanable
// segment, from the first, is rewritten: a record goes when a later record
// of its key is in the map, when it has no key, when its transaction was
// aborted (the .txnindex says which), or when it is a tombstone in a batch
// whose delete horizon has passed. The delete horizon (KIP-534) is stamped
// by the first pass that keeps a tombstone, or a marker whose transaction
// has no batch left: the pass's time plus the delete retention becomes the
// batch's base timestamp, with the delete-horizon attribute bit, and the
// records' timestamp deltas are rewritten so their timestamps stay. A
// marker goes when its delete horizon has passed and the pass saw no batch
// of its transaction (Kafka's rule: the pass that removes a transaction's
// last batch keeps the marker, a later one stamps it, one after the
// horizon drops it); the .txnindex of a
// cleaned segment holds the aborted transactions whose marker it kept. A
// producer's newest data batch always stays, emptied if need be, so its
// sequence survives. A batch that loses records keeps its header — base
// offset, last offset delta, max timestamp, producer fields — with the record
// count, length and CRC recomputed (recompressed with its codec; an
// emptied batch is uncompressed): offsets never change. Neighbouring
// segments are merged up to SegmentBytes; the merged segment takes the
// first one's name and the last one's end.
//
// The swap, per merged group at base B replacing the segments in [B, E):
// write B.log.cleaned, B.index.cleaned, B.timeindex.cleaned and
// B.txnindex.cleaned and sync them; write the manifest B.swap (E; written
// atomically, it is the commit point); publish the new segment list; remove
// the files of the segments in (B, E); rename the .cleaned files over B's
// files, the .log last; sync the directory; remove the manifest. Open
// first completes every swap whose manifest is present (idempotent) and
// removes every other .cleaned file, so a crash leaves the log either as it
// was or as cleaned. cleaner-offset-checkpoint (26 bytes: magic "EXCC",
// version 1, first dirty offset, compacted end, CRC-32C of the rest; the
// manifest has the same layout with "EXSW", B and E) is written atomically before the first swap (the compacted end,
// below which recovery accepts gaps) and after the last (the next first
// dirty offset).
//
// # Durability
//
// FsyncNever: the page cache; rolled segments are synced in the background
// (their .txnindex inline, at the roll) and WaitDurable returns at once.
// FsyncInterval: a goroutine syncs the active segment every Interval;
// WaitDurable waits for the sync that covers the offset. FsyncAlways:
// WaitDurable runs an fdatasync covering every offset written so far, and
// concurrent waiters share it (group commit). A sync of the active segment
// covers its .txnindex too (synced first): an offset is durable once the
// transaction index entries of the markers up to it are.
// After a failed write or sync the error is sticky: every later Append,
// WaitDurable, Roll, Flush, Truncate returns it; reads go on.
package storage
