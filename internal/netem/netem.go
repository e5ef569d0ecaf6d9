// Package netem impairs one direction of a network path the way Linux's
// netem queueing discipline does, but in user space, so that it needs no
// root and no kernel module: data handed to a Line is delivered to its
// writer after a one-way delay with jitter, no faster than a bandwidth
// cap, with an occasional loss. The load generator's fault proxy (per
// Kafka frame) and the cluster's partition proxies (per chunk of bytes
// between brokers) use it.
//
// # Model
//
// A Line is one direction of one TCP connection. Data sent at time t is
// delivered at
//
//	ready + delay + jitter sample [+ retransmission timeout when lost]
//
// where ready is t, or, under a bandwidth cap, when the link has finished
// transmitting everything sent before it plus this data (a Pacer, which
// lines sharing one link share). Delivery keeps the order of sending, as
// TCP does: data whose sample would overtake earlier data waits for it, so
// jitter only ever delays (and the mean delay under jitter is a little
// above Delay).
//
// Jitter distributions: uniform (netem's default), a sample uniform in
// [Delay-Jitter, Delay+Jitter]; normal, Delay plus Jitter times a
// standard normal sample. Either is clamped at zero.
//
// Loss: TCP does not lose bytes, it retransmits them, so a lost segment
// shows as data held back until the retransmission. Each send of n bytes
// spans ceil(n/1448) segments (a 1500-byte MTU's payload); it is lost with
// probability 1-(1-Loss)^segments and is then held a further Retransmit
// (default 200 ms, Linux's minimum retransmission timeout). Everything
// sent after it on the line waits behind it, as behind a TCP hole.
//
// Samples are a hash of (seed, send ordinal), not a shared random stream,
// so a line with the same seed draws the same delays for the same sends.
//
// # Timing
//
// Go's timers wake at millisecond granularity when the process is idle
// (a 500 µs timer fires after about 1.1 ms), which would add up to a
// millisecond to every delay. A line sleeps on a timer until about 2 ms
// before delivery and the rest in a nanosleep system call, whose
// precision is tens of microseconds; the system call's usual overshoot is
// learned and subtracted.
package netem

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Distribution is how jitter samples are drawn.
type Distribution string

// Distributions.
const (
	// Uniform draws uniformly in [delay-jitter, delay+jitter].
	Uniform Distribution = "uniform"
	// Normal draws delay + jitter × a standard normal sample.
	Normal Distribution = "normal"
)

// DefaultRetransmit is how long a lost segment holds its data when Link
// gives no Retransmit: Linux's minimum retransmission timeout.
const DefaultRetransmit = 200 * time.Millisecond

// segmentPayload is the TCP payload of one 1500-byte Ethernet frame.
const segmentPayload = 1448

// Link is the impairment of one direction of a path. The zero Link
// impairs nothing.
type Link struct {
	// Delay is the one-way delay added to everything sent.
	Delay time.Duration
	// Jitter spreads the delay (see Distribution).
	Jitter time.Duration
	// Distribution is the jitter's; "" means Uniform.
	Distribution Distribution
	// Rate caps the bandwidth, in bytes per second; 0: no cap.
	Rate int64
	// Loss is the probability that one segment is lost (0..1).
	Loss float64
	// Retransmit is how long a loss holds data back; 0: DefaultRetransmit.
	Retransmit time.Duration
}

// Zero reports whether the link impairs nothing.
func (l Link) Zero() bool { return l == Link{} }

// Validate reports a link that cannot be applied.
func (l Link) Validate() error {
	switch {
	case l.Delay < 0 || l.Jitter < 0 || l.Retransmit < 0:
		return errors.New("delay, jitter and retransmit must not be negative")
	case l.Rate < 0:
		return fmt.Errorf("rate %d: must not be negative", l.Rate)
	case !(l.Loss >= 0 && l.Loss <= 1):
		return fmt.Errorf("loss %v is outside [0, 1]", l.Loss)
	case l.Distribution != "" && l.Distribution != Uniform && l.Distribution != Normal:
		return fmt.Errorf("distribution %q is not %s or %s", l.Distribution, Uniform, Normal)
	case l.Distribution != "" && l.Jitter == 0:
		return errors.New("distribution applies to jitter: give a jitter")
	case l.Jitter > 0 && l.Distribution != Normal && l.Jitter > l.Delay:
		return fmt.Errorf("uniform jitter %v exceeds the delay %v (the delay would go below zero)", l.Jitter, l.Delay)
	}
	return nil
}

// Add combines two impairments of the same path: delays, jitters and
// retransmission timeouts add, the tighter bandwidth cap wins, losses
// compound. The distribution is the first one given.
func (l Link) Add(other Link) Link {
	if l.Zero() {
		return other // exactly: no rounding of the loss
	}
	out := Link{Delay: l.Delay + other.Delay, Jitter: l.Jitter + other.Jitter,
		Distribution: l.Distribution, Rate: l.Rate, Retransmit: max(l.Retransmit, other.Retransmit)}
	if out.Distribution == "" {
		out.Distribution = other.Distribution
	}
	if other.Rate > 0 && (out.Rate == 0 || other.Rate < out.Rate) {
		out.Rate = other.Rate
	}
	out.Loss = 1 - (1-l.Loss)*(1-other.Loss)
	return out
}

// String describes the link for events and tables ("delay 10ms ±2ms
// normal, rate 10MB/s, loss 0.1%").
func (l Link) String() string {
	if l.Zero() {
		return "no impairment"
	}
	var parts []string
	if l.Delay > 0 || l.Jitter > 0 {
		part := "delay " + l.Delay.String()
		if l.Jitter > 0 {
			distribution := l.Distribution
			if distribution == "" {
				distribution = Uniform
			}
			part += fmt.Sprintf(" ±%v %s", l.Jitter, distribution)
		}
		parts = append(parts, part)
	}
	if l.Rate > 0 {
		parts = append(parts, "rate "+FormatRate(l.Rate))
	}
	if l.Loss > 0 {
		retransmit := l.Retransmit
		if retransmit == 0 {
			retransmit = DefaultRetransmit
		}
		parts = append(parts, fmt.Sprintf("loss %s%% (retransmit %v)", strconv.FormatFloat(100*l.Loss, 'g', 4, 64), retransmit))
	}
	return strings.Join(parts, ", ")
}

// sample returns the time data of n bytes spends on the link after it is
// ready, drawn from the unit samples u1, u2 (jitter) and u3 (loss), and
// whether it was lost once.
func (l Link) sample(n int, u1, u2, u3 float64) (time.Duration, bool) {
	delay := float64(l.Delay)
	if l.Jitter > 0 {
		switch l.Distribution {
		case Normal:
			// Box–Muller; u1 in (0, 1] keeps the logarithm finite.
			z := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
			delay += float64(l.Jitter) * z
		default:
			delay += float64(l.Jitter) * (2*u1 - 1)
		}
	}
	delay = max(delay, 0)
	lost := false
	if l.Loss > 0 {
		segments := max(1, (n+segmentPayload-1)/segmentPayload)
		if u3 < 1-math.Pow(1-l.Loss, float64(segments)) {
			lost = true
			retransmit := l.Retransmit
			if retransmit == 0 {
				retransmit = DefaultRetransmit
			}
			delay += float64(retransmit)
		}
	}
	return time.Duration(delay), lost
}

// ParseRate reads a bandwidth: a number and a unit, with or without "/s":
// bytes (B, KB, MB, GB; KiB, MiB, GiB) or bits (bit, kbit, mbit, gbit, as
// tc spells them; also Kbps, Mbps, Gbps). "10MB/s" is 10,000,000 bytes per
// second, "100mbit" 12,500,000.
func ParseRate(text string) (int64, error) {
	trimmed := strings.TrimSuffix(strings.TrimSpace(text), "/s")
	split := strings.IndexFunc(trimmed, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if split <= 0 {
		return 0, fmt.Errorf("rate %q: want a number and a unit, such as 10MB/s or 100mbit", text)
	}
	number, err := strconv.ParseFloat(trimmed[:split], 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %w", text, err)
	}
	unit := strings.ToLower(strings.TrimSpace(trimmed[split:]))
	factors := map[string]float64{
		"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
		"bit": 1.0 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "bps": 1.0 / 8,
		"kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8,
	}
	factor, ok := factors[unit]
	if !ok {
		return 0, fmt.Errorf("rate %q: unknown unit %q (bytes: B KB MB GB KiB MiB GiB; bits: bit kbit mbit gbit)", text, unit)
	}
	rate := int64(math.Round(number * factor))
	if rate <= 0 {
		return 0, fmt.Errorf("rate %q: must be at least one byte per second", text)
	}
	return rate, nil
}

// FormatRate writes a bandwidth in bytes per second in the largest
// decimal unit that keeps it readable ("12.5MB/s").
func FormatRate(rate int64) string {
	value, unit := float64(rate), "B/s"
	for _, next := range []string{"KB/s", "MB/s", "GB/s"} {
		if value < 1000 {
			break
		}
		value, unit = value/1000, next
	}
	return strconv.FormatFloat(value, 'g', 4, 64) + unit
}

// Unit hashes its inputs to a float in [0, 1) with SplitMix64's
// finalizer, which mixes every input bit into every output bit: the
// samples of a line, and the fault proxy's probabilistic rules, are pure
// functions of their coordinates rather than draws from a shared stream.
func Unit(values ...uint64) float64 {
	var h uint64 = 0x9e3779b97f4a7c15
	for _, v := range values {
		h ^= v
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return float64(h>>11) / (1 << 53)
}
