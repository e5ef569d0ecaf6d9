package storage

import (
	"fmt"
	"sync"
)

// Rolled segments are synced in the background with fsync=never, so an
// append that rolls does not wait for a whole segment to reach the disk
// (Kafka flushes rolled segments asynchronously too). With interval and
// always the roll syncs inline, since durability promises depend on it.
//
// The flusher goroutine only calls Sync; everything else — index files and
// moving the recovery checkpoint past the segment — is done by the holder of
// appendMu when it collects the results, so appender-owned state stays
// single-owner. A checkpoint claims everything before it is synced, so every
// checkpoint written at a later position first drains the pending syncs.
type rollFlusher struct {
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

func newRollFlusher() *rollFlusher {
	f := &rollFlusher{requests: make(chan rollFlush, 16), done: make(chan struct{})}
	go f.run()
	return f
}

// run syncs each requested segment file in order.
func (f *rollFlusher) run() {
	defer close(f.done)
	for request := range f.requests {
		request.err = request.segment.log.file.Sync()
		request.segment.log.release()
		f.mu.Lock()
		f.completed = append(f.completed, request)
		f.mu.Unlock()
		f.pending.Done()
	}
}

// enqueue hands a sealed segment to the flusher (caller holds appendMu).
func (l *Log) enqueueRollFlush(s *segment) {
	s.log.acquire()
	l.flusher.pending.Add(1)
	l.flusher.requests <- rollFlush{segment: s, seal: s.seals}
}

// collectRollFlushes finishes completed background syncs: sticky error on
// failure, else index files and the recovery checkpoint moved past the
// segment — unless it was truncated since (caller holds appendMu).
func (l *Log) collectRollFlushes() error {
	if l.flusher == nil {
		return nil
	}
	l.flusher.mu.Lock()
	completed := l.flusher.completed
	l.flusher.completed = nil
	l.flusher.mu.Unlock()
	for _, result := range completed {
		s := result.segment
		if result.err != nil {
			return l.fail(fmt.Errorf("roll %s: sync segment %d: %w", l.dir, s.base, result.err))
		}
		next := l.segmentAfter(s)
		if next == nil || s.seals != result.seal {
			continue // removed, or truncated and written again since
		}
		if err := s.persistIndexes(l.fs, l.dir); err != nil {
			return l.fail(fmt.Errorf("roll %s: indexes of segment %d: %w", l.dir, s.base, err))
		}
		if l.lastCheckpoint.recoverySegment < next.base {
			if err := l.writeCheckpoint(next.base, 0, next.base); err != nil {
				return l.fail(fmt.Errorf("roll %s: %w", l.dir, err))
			}
		}
	}
	return nil
}

// segmentAfter returns the live segment following s, or nil if s is gone or active.
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
