package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// durability tracks what is synced, the sticky error and group commit.
type durability struct {
	mu sync.Mutex
	// durableEnd: every offset below it is durable per the policy.
	durableEnd int64
	// err is sticky: once a write or sync failed, every later Append and
	// WaitDurable returns it.
	err error
	// syncing: a goroutine is running a sync; others wait for its result
	// instead of starting their own (group commit).
	syncing bool
	// epoch counts truncations; a sync captured before one must not mark
	// offsets durable, since they may have been rewritten since.
	epoch  uint64
	closed bool
	// changed is closed and replaced whenever durableEnd, err or closed change.
	changed chan struct{}
	// syncs counts the group-commit and interval syncs run (for benchmarks).
	syncs atomic.Int64

	// Transaction index entries (AppendAbortedTxn) are written without a
	// sync and become durable with the next sync of their index. An
	// offset counts as durable only when the entries of the markers at or
	// before it are too (durableBelowLocked): a sync that captured the
	// log end after a marker was appended but before its entry was
	// written does not cover the entry, so durableEnd alone could pass
	// the marker with the entry unsynced.
	//
	// abortFloor is the smallest marker offset among the entries written
	// and not yet covered by a sync (math.MaxInt64: none);
	// abortFloorSinceCapture the smallest among those written since the
	// running syncActive captured the index. Entries are written under
	// appendMu, and syncs that run under it (roll, flush, truncation)
	// cover every entry written so far; syncActive, the only sync outside
	// it (one at a time: syncing), covers those written before its
	// capture, so when it succeeds the floor becomes
	// abortFloorSinceCapture.
	abortFloor             int64
	abortFloorSinceCapture int64
}

// durableBelowLocked is the offset below which every offset is durable,
// transaction index entries of markers included (caller holds mu).
func (d *durability) durableBelowLocked() int64 {
	return min(d.durableEnd, d.abortFloor)
}

// noteAbortWritten records an entry written to the active segment's
// transaction index, for the abort marker at offset marker (caller holds
// appendMu and wrote the entry first).
func (l *Log) noteAbortWritten(marker int64) {
	d := &l.durability
	d.mu.Lock()
	defer d.mu.Unlock()
	d.abortFloor = min(d.abortFloor, marker)
	d.abortFloorSinceCapture = min(d.abortFloorSinceCapture, marker)
}

// abortsUnsynced says whether some written entry is not synced yet.
func (l *Log) abortsUnsynced() bool {
	d := &l.durability
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.abortFloor != math.MaxInt64
}

// abortsAllSynced records that every entry written so far is durable: the
// caller holds appendMu (no entry is being written) and synced the index
// of every segment that can hold an unsynced one — the active segment, or
// the one a roll just sealed.
func (l *Log) abortsAllSynced() {
	d := &l.durability
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.abortFloor != math.MaxInt64 {
		d.abortFloor, d.abortFloorSinceCapture = math.MaxInt64, math.MaxInt64
		d.broadcastLocked()
	}
}

// broadcastLocked wakes every waiter (caller holds mu).
func (d *durability) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// stickyError is the sticky write/sync error, or nil.
func (l *Log) stickyError() error {
	l.durability.mu.Lock()
	defer l.durability.mu.Unlock()
	return l.durability.err
}

// fail records err as the sticky error (the first one wins) and returns it.
func (l *Log) fail(err error) error {
	l.durability.mu.Lock()
	defer l.durability.mu.Unlock()
	if l.durability.err == nil {
		l.durability.err = err
		l.durability.broadcastLocked()
	}
	return l.durability.err
}

// advanceDurable marks offsets below end durable (caller synced them and
// holds appendMu, so no truncation can race).
func (l *Log) advanceDurable(end int64) {
	l.durability.mu.Lock()
	defer l.durability.mu.Unlock()
	if end > l.durability.durableEnd {
		l.durability.durableEnd = end
		l.durability.broadcastLocked()
	}
}

// WaitDurable returns when every offset up to and including offset is durable
// per the fsync policy: never → at once; interval → after the next periodic
// sync covering it; always → after an fdatasync covering it, shared by all
// concurrent waiters (group commit). Durable includes the transaction index
// entries appended (AppendAbortedTxn) for abort markers at or before offset
// before the call. It fails with the sticky error after a
// write or sync failure, with ErrNotWritten for an offset at or beyond the log
// end, with ErrClosed after Close, or with ctx's error.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	for {
		logEnd := l.LogEndOffset()
		l.durability.mu.Lock()
		d := &l.durability
		switch {
		case d.err != nil:
			err := d.err
			d.mu.Unlock()
			return err
		case offset < d.durableBelowLocked() || (l.opts.Fsync.Mode == FsyncNever && offset < logEnd):
			d.mu.Unlock()
			return nil
		case offset >= logEnd:
			d.mu.Unlock()
			return fmt.Errorf("wait durable %s: offset %d, log end %d: %w", l.dir, offset, logEnd, ErrNotWritten)
		case d.closed:
			d.mu.Unlock()
			return ErrClosed
		case l.opts.Fsync.Mode == FsyncAlways && !d.syncing:
			d.syncing = true
			d.mu.Unlock()
			l.syncActive()
			continue
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait durable %s: offset %d: %w", l.dir, offset, ctx.Err())
		}
	}
}

// syncActive runs one fdatasync of the active segment — its transaction
// index, if open, then its data — on behalf of every waiter and marks what
// it covered durable. The caller set durability.syncing.
//
// Sequence: the files, the log end and the truncation epoch are captured
// together under mu, after the appender published those offsets (so their
// bytes were written); segments before the active one were synced when they
// rolled. If a Truncate ran meanwhile (epoch changed) the result is dropped:
// the captured offsets may have been rewritten after the sync started.
//
// Transaction index entries: the capture resets abortFloorSinceCapture
// under durability.mu, inside mu. An entry noted before it was written
// before it, into the index captured here: the segment active when it was
// written was published before the write, and is still the active one at
// the capture, or a roll sealed it and synced its index before publishing
// the next (under appendMu). So the sync covers every entry noted before
// the capture; those noted after stay in the floor. The index is synced
// before the data, so a crash between the two leaves entries whose markers
// are lost, which recovery drops, rather than markers without entries.
func (l *Log) syncActive() {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		l.finishSync(0, 0, false, nil)
		return
	}
	active := l.active()
	active.log.acquire()
	txnFile := active.txnFile
	if txnFile != nil {
		txnFile.acquire() // a roll may close it meanwhile; the sync still covers its entries
	}
	target := l.logEnd
	l.durability.mu.Lock()
	epoch := l.durability.epoch
	l.durability.abortFloorSinceCapture = math.MaxInt64
	l.durability.mu.Unlock()
	l.mu.RUnlock()
	var err error
	if txnFile != nil {
		if err = txnFile.file.Sync(); err != nil {
			err = fmt.Errorf("transaction index: %w", err)
		}
		err = errors.Join(err, txnFile.release())
	}
	if err == nil {
		err = l.syncSegment(active.log.file)
	}
	l.durability.syncs.Add(1)
	if releaseErr := active.log.release(); err == nil {
		err = releaseErr
	}
	if err != nil {
		err = fmt.Errorf("sync %s segment %d: %w", l.dir, active.base, err)
	}
	l.finishSync(target, epoch, true, err)
}

// finishSync publishes a sync's result and lets the next sync start;
// captured says the sync captured the transaction index (syncActive).
func (l *Log) finishSync(target int64, epoch uint64, captured bool, err error) {
	d := &l.durability
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncing = false
	if err != nil && d.err == nil {
		d.err = err
	} else if err == nil && epoch == d.epoch {
		d.durableEnd = max(d.durableEnd, target)
		if captured {
			d.abortFloor = d.abortFloorSinceCapture
		}
	}
	d.broadcastLocked()
}

// runIntervalSync syncs the active segment every interval while there is
// something unsynced (FsyncInterval). It owns no state: it goes through the
// same single-syncer protocol as WaitDurable.
func (l *Log) runIntervalSync(interval time.Duration) {
	defer close(l.intervalDone)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-l.intervalStop:
			return
		case <-ticker.C:
		}
		logEnd := l.LogEndOffset()
		d := &l.durability
		d.mu.Lock()
		start := d.err == nil && !d.syncing && d.durableBelowLocked() < logEnd
		if start {
			d.syncing = true
		}
		d.mu.Unlock()
		if start {
			l.syncActive()
		}
	}
}

// stopIntervalSync stops the interval goroutine, if any, and waits for it.
func (l *Log) stopIntervalSync() {
	if l.intervalStop == nil {
		return
	}
	close(l.intervalStop)
	<-l.intervalDone
	l.intervalStop = nil
}

// syncSegment fdatasyncs a segment's data file and reports the call to
// Options.OnSync, if set.
func (l *Log) syncSegment(file File) error {
	if l.onSync == nil {
		return file.Sync()
	}
	start := time.Now()
	err := file.Sync()
	l.onSync(time.Since(start))
	return err
}
