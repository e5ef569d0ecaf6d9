package storage

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// FsyncMode says when appended data is made durable.
type FsyncMode int

// The fsync modes.
const (
	// FsyncNever leaves data in the page cache; the OS writes it back. Segments
	// are still synced when they roll and at Flush/Close (Kafka's default).
	FsyncNever FsyncMode = iota
	// FsyncInterval syncs the active segment every FsyncPolicy.Interval.
	FsyncInterval
	// FsyncAlways syncs before WaitDurable returns; concurrent waiters share
	// one fdatasync (group commit).
	FsyncAlways
)

// String names the mode as ParseFsyncPolicy spells it.
func (m FsyncMode) String() string {
	switch m {
	case FsyncNever:
		return "never"
	case FsyncInterval:
		return "interval"
	case FsyncAlways:
		return "always"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// FsyncPolicy is the durability policy of a log.
type FsyncPolicy struct {
	Mode     FsyncMode
	Interval time.Duration // only for FsyncInterval; must be > 0
}

// String formats the policy as ParseFsyncPolicy reads it.
func (p FsyncPolicy) String() string {
	if p.Mode == FsyncInterval {
		return "interval:" + p.Interval.String()
	}
	return p.Mode.String()
}

// ParseFsyncPolicy reads "never", "always" or "interval:<duration>" (e.g.
// "interval:200ms").
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch {
	case s == "never":
		return FsyncPolicy{Mode: FsyncNever}, nil
	case s == "always":
		return FsyncPolicy{Mode: FsyncAlways}, nil
	case strings.HasPrefix(s, "interval:"):
		interval, err := time.ParseDuration(strings.TrimPrefix(s, "interval:"))
		if err != nil {
			return FsyncPolicy{}, fmt.Errorf("fsync policy %q: %w", s, err)
		}
		if interval <= 0 {
			return FsyncPolicy{}, fmt.Errorf("fsync policy %q: interval must be positive", s)
		}
		return FsyncPolicy{Mode: FsyncInterval, Interval: interval}, nil
	}
	return FsyncPolicy{}, fmt.Errorf("fsync policy %q: want never, always or interval:<duration>", s)
}

// Options configure a Log. The zero value is usable: 1 GiB segments, no
// retention, fsync never, the OS file system.
type Options struct {
	// SegmentBytes: roll when the active segment would exceed this. Default 1
	// GiB; at most 2 GiB - 1 because index positions are 32 bits.
	SegmentBytes int64
	// SegmentAge: roll when the active segment is older (Kafka's segment.ms);
	// 0 = never. The age counts from the first batch's max timestamp, or from
	// the segment's creation if it has no timestamp.
	SegmentAge time.Duration
	// RetentionBytes: delete old segments while the log is larger; <= 0 means
	// unlimited. (Open maps 0 to unlimited; the broker passes -1.)
	RetentionBytes int64
	// RetentionAge: delete segments whose newest record is older; <= 0 means unlimited.
	RetentionAge time.Duration
	// IndexIntervalBytes: one offset/time index entry per this many bytes; default 4096.
	IndexIntervalBytes int
	// Fsync is the durability policy.
	Fsync FsyncPolicy
	// FS is the file system; nil = the OS file system.
	FS FS
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// OnSync, if set, is called after every fdatasync of a segment's data
	// file (group commit, interval sync, roll, flush, truncation) with
	// the call's duration, from whichever goroutine ran it; it must be
	// cheap and safe for concurrent use. It is how the broker counts
	// fsyncs without this package knowing about metrics. Fixed at Open.
	OnSync func(time.Duration)
}

const (
	defaultSegmentBytes       = 1 << 30
	defaultIndexIntervalBytes = 4096
	// checkpointBytes: with fsync interval/always, the appender writes a
	// recovery checkpoint every this many bytes, so a crash rescans at most
	// this much of the active segment.
	checkpointBytes = 64 << 20
)

// withDefaults fills zero fields and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = defaultSegmentBytes
	}
	if o.SegmentBytes < 0 || o.SegmentBytes > math.MaxInt32 {
		return o, fmt.Errorf("segment bytes %d: want 1..%d", o.SegmentBytes, math.MaxInt32)
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = defaultIndexIntervalBytes
	}
	if o.IndexIntervalBytes < 0 {
		return o, fmt.Errorf("index interval bytes %d: must be positive", o.IndexIntervalBytes)
	}
	if o.Fsync.Mode == FsyncInterval && o.Fsync.Interval <= 0 {
		return o, fmt.Errorf("fsync interval %v: must be positive", o.Fsync.Interval)
	}
	if o.Fsync.Mode < FsyncNever || o.Fsync.Mode > FsyncAlways {
		return o, fmt.Errorf("fsync mode %d unknown", int(o.Fsync.Mode))
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// SetOptions changes the segment and retention settings of an open log:
// SegmentBytes, SegmentAge, RetentionBytes, RetentionAge and
// IndexIntervalBytes take effect from the next append or retention pass.
// The fsync policy, file system and clock are fixed at Open; a different
// fsync policy is refused.
//
// It takes appendMu: every reader of those settings (Append's roll check,
// ApplyRetention) holds appendMu too.
func (l *Log) SetOptions(opts Options) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if opts.Fsync != (FsyncPolicy{}) && opts.Fsync != l.opts.Fsync {
		return fmt.Errorf("set options of %s: fsync policy is fixed at open (have %v, asked %v)", l.dir, l.opts.Fsync, opts.Fsync)
	}
	opts.Fsync, opts.FS, opts.Now, opts.OnSync = l.opts.Fsync, l.opts.FS, l.opts.Now, l.opts.OnSync
	updated, err := opts.withDefaults()
	if err != nil {
		return fmt.Errorf("set options of %s: %w", l.dir, err)
	}
	l.opts = updated
	return nil
}
