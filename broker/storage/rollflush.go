package storage

import (
	"fmt"
	"sync"
	"time"
)

// Rolled segments are synced in the background with fsync=never, so an
// append that rolls does not wait for a whole segment to reach the disk
// (Kafka flushes rolled segments asynchronously too). With interval and
// always the roll syncs inline, since durability promises depend on it.
//
// The flusher goroutine syncs each rolled segment, records a failure as
// the log's sticky error at once (the next Append fails), and then
// collects the results itself: index files and the recovery checkpoint
// moved past the segment. It collects under removeMu (taken with TryLock,
// so it never waits for retention, truncation or Delete, which may be
// waiting for it) and checkpointMu, never appendMu, so appends go on
// meanwhile. What it could not collect, the next completion or a drain
// (Truncate, Flush, Close, all under appendMu) collects. A sealed
// segment's index entries and persisted counts change only by truncation,
// which holds removeMu and drains first, so the collector owns them. A
// checkpoint claims everything before it is synced, so every checkpoint
// written at a later position first drains the pending syncs.
type rollFlusher struct {
	log      *Log
	requests chan rollFlush // closed by stop (under appendMu)
	done     chan struct{}  // closed when the goroutine exits
	pending  sync.WaitGroup // requests not yet completed

	mu        sync.Mutex
	completed []rollFlush // results to collect, guarded by mu
}

// rollFlush asks for one sealed segment to be synced, and carries the result.
type rollFlush struct {
	segment *segment
	seal    int // segment.seals when requested: a later truncation makes the result stale
	err     error
}

func newRollFlusher(l *Log) *rollFlusher {
	f := &rollFlusher{log: l, requests: make(chan rollFlush, 16), done: make(chan struct{})}
	go f.run()
	return f
}

// run syncs each requested segment file in order and collects the results
// when no other request is queued. When removeMu is taken (a clean,
// retention, truncation), it tries again every collectRetry until it
// collects or another request comes: a quiet partition gets no further
// roll to collect for it, and its recovery point — which the log cleaner
// cleans up to — would stay behind its closed segments until one came.
func (f *rollFlusher) run() {
	defer close(f.done)
	l := f.log
	var retry <-chan time.Time
	for {
		select {
		case request, ok := <-f.requests:
			if !ok {
				return
			}
			request.err = l.syncSegment(request.segment.log.file)
			request.segment.log.release()
			if request.err != nil {
				l.fail(fmt.Errorf("roll %s: sync segment %d: %w", l.dir, request.segment.base, request.err))
			}
			f.mu.Lock()
			f.completed = append(f.completed, request)
			f.mu.Unlock()
			f.pending.Done()
			retry = nil
			if len(f.requests) == 0 && !f.tryCollect() {
				retry = time.After(collectRetry)
			}
		case <-retry:
			retry = nil
			if !f.tryCollect() {
				retry = time.After(collectRetry)
			}
		}
	}
}

// collectRetry is how soon the flusher tries again to collect results it
// could not (removeMu was held).
const collectRetry = 100 * time.Millisecond

// tryCollect collects the completed results unless removeMu is held; it
// reports false when it could not (and something is left to collect).
func (f *rollFlusher) tryCollect() bool {
	f.mu.Lock()
	left := len(f.completed)
	f.mu.Unlock()
	if left == 0 {
		return true
	}
	if !f.log.removeMu.TryLock() {
		return false
	}
	f.log.collectCompleted(f)
	f.log.removeMu.Unlock()
	return true
}

// enqueue hands a sealed segment to the flusher (caller holds appendMu).
func (l *Log) enqueueRollFlush(s *segment) {
	s.log.acquire()
	l.flusher.pending.Add(1)
	l.flusher.requests <- rollFlush{segment: s, seal: s.seals}
}

// collectRollFlushes collects the flusher's completed results (caller
// holds appendMu; see collectCompleted).
func (l *Log) collectRollFlushes() error {
	if l.flusher == nil {
		return nil
	}
	return l.collectCompleted(l.flusher)
}

// collectCompleted finishes completed background syncs: sticky error on
// failure, else index files and the recovery checkpoint moved past the
// segment — unless it was removed, or truncated since. The caller holds
// appendMu or removeMu (either excludes truncation's changes to sealed
// segments and, with the list check under mu, retention's removal);
// checkpointMu serializes the collectors.
func (l *Log) collectCompleted(f *rollFlusher) error {
	l.checkpointMu.Lock()
	defer l.checkpointMu.Unlock()
	f.mu.Lock()
	completed := f.completed
	f.completed = nil
	f.mu.Unlock()
	for _, result := range completed {
		s := result.segment
		if result.err != nil {
			return l.fail(fmt.Errorf("roll %s: sync segment %d: %w", l.dir, s.base, result.err))
		}
		l.mu.RLock()
		next, seals := l.segmentAfter(s), s.seals
		l.mu.RUnlock()
		if next == nil || seals != result.seal {
			continue // removed, or truncated and written again since
		}
		if err := s.persistIndexes(l.fs, l.dir); err != nil {
			return l.fail(fmt.Errorf("roll %s: indexes of segment %d: %w", l.dir, s.base, err))
		}
		if l.lastCheckpoint.recoverySegment < next.base {
			if err := l.writeCheckpointLocked(next.base, 0, next.base); err != nil {
				return l.fail(fmt.Errorf("roll %s: %w", l.dir, err))
			}
		}
	}
	return nil
}

// segmentAfter returns the live segment following s, or nil if s is gone
// or active (caller holds mu, or appendMu).
func (l *Log) segmentAfter(s *segment) *segment {
	for i, candidate := range l.segments[:len(l.segments)-1] {
		if candidate == s {
			return l.segments[i+1]
		}
	}
	return nil
}

// drainRollFlushes waits for every pending background sync and collects the
// results (caller holds appendMu; the flusher never takes it).
func (l *Log) drainRollFlushes() error {
	if l.flusher == nil {
		return nil
	}
	l.flusher.pending.Wait()
	return l.collectRollFlushes()
}

// stopRollFlusher drains and stops the flusher (caller holds appendMu).
func (l *Log) stopRollFlusher() error {
	if l.flusher == nil {
		return nil
	}
	err := l.drainRollFlushes()
	close(l.flusher.requests)
	<-l.flusher.done
	l.flusher = nil
	return err
}
