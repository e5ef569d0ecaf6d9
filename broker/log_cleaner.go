package broker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
)

// The log cleaner (Kafka's LogCleaner): log.cleaner.threads goroutines
// compact the logs whose cleanup.policy includes compact — user
// partitions, and the internal topics' logs (__consumer_offsets and
// __transaction_state are compacted, as in Kafka) — by calling
// [storage.Log.Clean] (the [storage] package doc explains compaction
// under "Compaction").
//
// Scheduling: each goroutine, in a loop, asks every compacted log for its
// CleanableStats and cleans the one with the highest dirty ratio among
// those due — dirty ratio at least min.cleanable.dirty.ratio, the first
// dirty batch older than max.compaction.lag.ms, or a delete horizon left
// by its last clean passed (tombstones to remove) — then looks again
// at once; when none is due it sleeps log.cleaner.backoff.ms (or until
// Broker.cleanNow wakes it, or the broker closes).
//
// What a clean may touch: Clean itself never touches the active segment,
// nor a segment at or past the recovery point or the min.compaction.lag.ms
// horizon. Its upper bound here is the last stable offset — of a
// partition, [partition.Partition.LastStableOffset], which is also never above the
// high watermark of a replicated partition. A producer's newest batch is always kept
// (CleanOptions.LastBatchOfProducer, from the partition's producer
// state), so an idempotent retry after a clean and a restart is still
// recognised as a duplicate.
//
// Ownership and locking: logCleaner.mu guards busy and uncleanable, and
// is a leaf held only to read or update them (never across I/O). A log in
// busy is being cleaned by one goroutine; no other picks it. A partition's
// upper bound and its producers' last batches are read together under its
// appendMu (lock 6 in the package doc's lock order), before Clean runs,
// which takes only storage's own locks (removeMu, and appendMu briefly per
// swap): every offset past that upper bound, so every batch appended after
// the capture, is beyond what Clean may rewrite. Broker.Close cancels
// b.ctx, which aborts a Clean in progress (CleanOptions.Abort) and ends the
// goroutines before the logs close (they count in b.background).
//
// Errors: a failed clean is logged with the log's name and error, counted
// (exactly_log_cleaner_failures_total), and the log is marked uncleanable
// until the broker restarts (Kafka's uncleanable partitions): it is
// skipped from then on. A panic inside a clean is recovered and treated
// the same way.

// cleanTarget is one log the cleaner may compact.
type cleanTarget struct {
	name   string
	log    *storage.Log
	config *topicConfig
	// bounds returns the clean's upper bound and the producers' last
	// batches, captured together.
	bounds func() (upperBound int64, lastBatches map[int64]int64, err error)
	// estimate is a cheap upper bound at least as high as bounds' (the
	// last stable offset of a partition, the log end of an internal log),
	// for the scheduling stats.
	estimate func() int64
}

// logCleaner is the cleaner's shared state (see the file comment).
type logCleaner struct {
	broker *Broker
	// wake is signalled (without blocking) by cleanNow.
	wake chan struct{}

	mu          sync.Mutex
	busy        map[*storage.Log]bool  // logs being cleaned (mu)
	uncleanable map[*storage.Log]error // logs whose clean failed, skipped until restart (mu)
	// stalled holds logs whose last clean did not move their first dirty
	// offset (their upper bound is below what the stats saw, e.g. an
	// open transaction): skipped until the time given (mu).
	stalled map[*storage.Log]time.Time
	// horizons holds each log's earliest delete horizon left by its last
	// clean (CleanResult.NextDeleteHorizon): once it has passed the log is
	// due, dirty or not, so tombstones and finished transactions' markers
	// go about delete.retention.ms after the clean that first kept them
	// (mu; in memory: after a restart they go at the log's next clean).
	horizons map[*storage.Log]time.Time
}

// startLogCleaner starts log.cleaner.threads goroutines (counted in
// b.background) unless log.cleaner.enable is false.
func (b *Broker) startLogCleaner() {
	settings := b.config.settings
	b.cleaner = &logCleaner{broker: b, wake: make(chan struct{}, max(int(settings.CleanerThreads), 1)),
		busy: map[*storage.Log]bool{}, uncleanable: map[*storage.Log]error{}, stalled: map[*storage.Log]time.Time{},
		horizons: map[*storage.Log]time.Time{}}
	if !settings.CleanerEnable {
		return
	}
	threads := max(int(settings.CleanerThreads), 1)
	b.background.Add(threads)
	for range threads {
		go b.cleaner.run()
	}
}

// cleanNow wakes the cleaner goroutines for a pass now rather than after
// their backoff (tests use it).
func (b *Broker) cleanNow() {
	if b.cleaner == nil {
		return
	}
	for range max(int(b.config.settings.CleanerThreads), 1) {
		select {
		case b.cleaner.wake <- struct{}{}:
		default:
		}
	}
}

// run is one cleaner goroutine.
func (lc *logCleaner) run() {
	b := lc.broker
	defer b.background.Done()
	backoff := b.config.settings.CleanerBackoff
	for {
		if b.ctx.Err() != nil {
			return
		}
		if lc.cleanOne() {
			continue
		}
		timer := time.NewTimer(backoff)
		select {
		case <-b.ctx.Done():
			timer.Stop()
			return
		case <-lc.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// candidate is a target due for cleaning, with its dirty ratio.
type candidate struct {
	target     cleanTarget
	ratio      float64
	firstDirty int64
}

// cleanOne picks the dirtiest due log, cleans it and reports whether it
// found one.
func (lc *logCleaner) cleanOne() bool {
	b := lc.broker
	now := time.Now()
	var best *candidate
	targets := b.cleanTargets()
	lc.forgetGone(targets)
	for _, target := range targets {
		lc.mu.Lock()
		skip := lc.busy[target.log] || lc.uncleanable[target.log] != nil || now.Before(lc.stalled[target.log])
		horizon, hasHorizon := lc.horizons[target.log]
		lc.mu.Unlock()
		if skip {
			continue
		}
		ratio, firstDirty, due, err := target.due(now)
		due = due || err == nil && hasHorizon && !now.Before(horizon)
		if err != nil {
			if !errors.Is(err, storage.ErrClosed) {
				b.logger.Warn("log cleaner: cleanable stats failed", "log", target.name, "error", err)
			}
			continue
		}
		if due && (best == nil || ratio > best.ratio) {
			best = &candidate{target: target, ratio: ratio, firstDirty: firstDirty}
		}
	}
	if best == nil {
		return false
	}
	lc.mu.Lock()
	if lc.busy[best.target.log] {
		lc.mu.Unlock()
		return true // another goroutine took it meanwhile: look again
	}
	lc.busy[best.target.log] = true
	lc.mu.Unlock()
	defer func() {
		lc.mu.Lock()
		delete(lc.busy, best.target.log)
		lc.mu.Unlock()
	}()
	lc.clean(best, now)
	return true
}

// forgetGone drops the marks of logs that are no longer targets (deleted
// topics, a policy changed back to delete).
func (lc *logCleaner) forgetGone(targets []cleanTarget) {
	current := make(map[*storage.Log]bool, len(targets))
	for _, target := range targets {
		current[target.log] = true
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for log := range lc.uncleanable {
		if !current[log] {
			delete(lc.uncleanable, log)
		}
	}
	for log := range lc.stalled {
		if !current[log] {
			delete(lc.stalled, log)
		}
	}
	for log := range lc.horizons {
		if !current[log] {
			delete(lc.horizons, log)
		}
	}
}

// due reports the target's dirty ratio, its first dirty offset, and
// whether it is due: its dirty ratio reaches min.cleanable.dirty.ratio, or
// its first dirty batch is older than max.compaction.lag.ms.
func (t cleanTarget) due(now time.Time) (ratio float64, firstDirty int64, due bool, err error) {
	stats, err := t.log.CleanableStats(storage.CleanOptions{UpperBound: t.estimate(), Now: now,
		MinCompactionLag: t.config.minCompactionLag})
	if err != nil {
		return 0, 0, false, err
	}
	if stats.DirtyBytes == 0 {
		return 0, stats.FirstDirtyOffset, false, nil
	}
	ratio = stats.DirtyRatio()
	if ratio >= t.config.minCleanableRatio {
		return ratio, stats.FirstDirtyOffset, true, nil
	}
	lagged := stats.FirstDirtyTimestamp >= 0 && t.config.maxCompactionLag < time.Duration(math.MaxInt64) &&
		now.Sub(time.UnixMilli(stats.FirstDirtyTimestamp)) >= t.config.maxCompactionLag
	return ratio, stats.FirstDirtyOffset, lagged, nil
}

// clean runs one Clean of the candidate and records its outcome.
func (lc *logCleaner) clean(c *candidate, now time.Time) {
	b := lc.broker
	target, ratio := c.target, c.ratio
	upperBound, lastBatches, err := target.bounds()
	if err == nil {
		var result storage.CleanResult
		started := time.Now()
		result, err = cleanRecovering(target.log, storage.CleanOptions{
			UpperBound:          upperBound,
			Now:                 now,
			DeleteRetention:     target.config.tombstoneRetention,
			MinCompactionLag:    target.config.minCompactionLag,
			MaxBytesPerSecond:   lc.rate(),
			LastBatchOfProducer: lastBatches,
			Abort:               b.ctx.Done(),
		})
		if err == nil {
			lc.mu.Lock()
			if result.FirstDirtyOffset <= c.firstDirty {
				lc.stalled[target.log] = now.Add(b.config.settings.CleanerBackoff)
			}
			if result.NextDeleteHorizon >= 0 {
				lc.horizons[target.log] = time.UnixMilli(result.NextDeleteHorizon)
			} else {
				delete(lc.horizons, target.log)
			}
			lc.mu.Unlock()
			if b.metrics != nil {
				b.metrics.LogCleaned(result.BytesRead, result.BytesWritten, result.RecordsRemoved)
			}
			b.logger.Debug("log cleaned", "log", target.name, "dirty_ratio", strconv.FormatFloat(ratio, 'f', 3, 64),
				"upper_bound", upperBound, "bytes_read", result.BytesRead, "bytes_written", result.BytesWritten,
				"records_removed", result.RecordsRemoved, "segments_rewritten", result.SegmentsRewritten,
				"first_dirty_offset", result.FirstDirtyOffset, "took", time.Since(started))
			return
		}
	}
	if errors.Is(err, storage.ErrCleanAborted) || errors.Is(err, storage.ErrClosed) {
		return // the broker is closing, or the partition was deleted
	}
	lc.mu.Lock()
	lc.uncleanable[target.log] = err
	lc.mu.Unlock()
	if b.metrics != nil {
		b.metrics.LogCleanerFailed()
	}
	b.logger.Error("log cleaner: clean failed; the log is marked uncleanable until restart", "log", target.name, "error", err)
}

// cleanRecovering is Log.Clean with a panic turned into an error, so one
// log's bug marks that log uncleanable instead of ending the broker (Clean
// releases its locks by defer).
func cleanRecovering(log *storage.Log, opts storage.CleanOptions) (result storage.CleanResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("clean panicked: %v", r)
		}
	}()
	return log.Clean(opts)
}

// rate is each goroutine's share of log.cleaner.io.max.bytes.per.second
// (0: unbounded).
func (lc *logCleaner) rate() int64 {
	settings := lc.broker.config.settings
	if settings.CleanerMaxBytesPerSecond <= 0 {
		return 0
	}
	return max(settings.CleanerMaxBytesPerSecond/int64(max(settings.CleanerThreads, 1)), 1)
}

// cleanTargets lists the logs whose cleanup.policy includes compact: the
// partitions here, user and internal.
func (b *Broker) cleanTargets() []cleanTarget {
	var out []cleanTarget
	for _, p := range b.allPartitions() {
		config := p.topic.config.Load()
		if !config.compact || p.Closed() {
			continue
		}
		out = append(out, cleanTarget{name: p.Name(), log: p.Log(), config: config, bounds: p.CleanBounds, estimate: p.LastStableOffset})
	}
	return out
}
