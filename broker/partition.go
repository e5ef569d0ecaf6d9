package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/exactly-eos/exactly/broker/storage"
)

// leaderEpoch is the partition leader epoch of every partition on a single
// broker: it leads from the start and never changes.
const leaderEpoch int32 = 0

// partition is one topic partition: its log and the notification that
// wakes long-polling fetches.
type partition struct {
	topic *topic
	index int32
	log   *storage.Log

	// appendMu serialises appends: storage.Log allows one appender at a
	// time, and connections append from their own reader goroutines. It
	// also guards the transition of closed to true, so no append runs on a
	// closed log.
	appendMu sync.Mutex
	// closed is set (under appendMu) when the log is closed or deleted;
	// readers check it to report UNKNOWN_TOPIC_OR_PARTITION.
	closed atomic.Bool

	// notifyMu guards notify: a channel closed and replaced after every
	// append, so any number of fetches can wait for new data without
	// polling. A waiter takes the channel before reading the log, so an
	// append between its read and its wait still wakes it.
	notifyMu sync.Mutex
	notify   chan struct{}
}

// openPartition opens (or with fresh, first wipes and creates) the log of
// partition index of t.
func (b *Broker) openPartition(t *topic, index int32, fresh bool) (*partition, error) {
	dir := filepath.Join(b.dataDir, partitionDirName(t.name, index))
	if fresh {
		// A stale directory of a deleted topic with the same name must not
		// resurface as the new topic's data.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%w: clear %s: %w", errStorage, dir, err)
		}
	}
	options, err := b.config.storageOptions(t.config.Load())
	if err != nil {
		return nil, err
	}
	log, report, err := storage.Open(dir, options)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", errStorage, dir, err)
	}
	if !fresh {
		b.logger.Info("partition loaded", "partition", partitionDirName(t.name, index),
			"log_start_offset", log.LogStartOffset(), "log_end_offset", log.LogEndOffset(),
			"recovery", fmt.Sprintf("%+v", report))
	}
	return &partition{topic: t, index: index, log: log, notify: make(chan struct{})}, nil
}

// name is "<topic>-<index>", for logs and errors.
func (p *partition) name() string { return partitionDirName(p.topic.name, p.index) }

// append writes validated batches (their base offsets are patched in
// place) and wakes fetches waiting on the partition.
func (p *partition) append(batches []byte) (storage.AppendResult, error) {
	p.appendMu.Lock()
	if p.closed.Load() {
		p.appendMu.Unlock()
		return storage.AppendResult{}, fmt.Errorf("%w: %s was deleted", errUnknownTopic, p.name())
	}
	result, err := p.log.Append(batches)
	p.appendMu.Unlock()
	if err != nil {
		return result, fmt.Errorf("%w: append to %s: %w", errStorage, p.name(), err)
	}
	p.wakeWaiters()
	return result, nil
}

func (p *partition) wakeWaiters() {
	p.notifyMu.Lock()
	close(p.notify)
	p.notify = make(chan struct{})
	p.notifyMu.Unlock()
}

// waitChannel returns the channel the next append closes.
func (p *partition) waitChannel() <-chan struct{} {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	return p.notify
}

// waitDurable waits until offset is durable under the log's fsync policy.
func (p *partition) waitDurable(ctx context.Context, offset int64) error {
	if err := p.log.WaitDurable(ctx, offset); err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: %s: %w", errShuttingDown, p.name(), err)
		}
		return fmt.Errorf("%w: sync %s: %w", errStorage, p.name(), err)
	}
	return nil
}

// highWatermark is the offset after the last readable record. With one
// replica every appended record is committed, so it is the log end.
func (p *partition) highWatermark() int64 { return p.log.LogEndOffset() }

// applyRetention deletes segments beyond the topic's retention.
func (p *partition) applyRetention() (int, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return 0, nil
	}
	return p.log.ApplyRetention()
}

// optionsSetter is implemented by a storage.Log that can change its
// segment and retention options while open.
type optionsSetter interface {
	SetOptions(storage.Options) error
}

// reconfigure applies a topic's new configuration to the log. Settings the
// broker checks itself (max.message.bytes, min.insync.replicas,
// message.timestamp.type) take effect through the topic's config snapshot.
func (p *partition) reconfigure(options storage.Options) error {
	setter, ok := any(p.log).(optionsSetter)
	if !ok {
		return nil
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return nil
	}
	return setter.SetOptions(options)
}

// close flushes and closes the log.
func (p *partition) close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	p.wakeWaiters()
	if err := p.log.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p.name(), err)
	}
	return nil
}

// delete closes the log and removes its files.
func (p *partition) delete() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.closed.Store(true)
	p.wakeWaiters()
	if err := p.log.Delete(); err != nil {
		return fmt.Errorf("delete %s: %w", p.name(), err)
	}
	return nil
}
