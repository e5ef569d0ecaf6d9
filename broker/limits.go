package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds the connection limits: how many connections the broker
// keeps open (in total and per client IP address, checked by acceptLoop),
// and how many request bytes it holds read but not yet served (per
// connection and in total, checked by each connection's reader before it
// reads a request's body). A connection over a connection limit is closed
// at once; a reader over a byte limit stops reading until bytes are
// released (backpressure), and a request that could never fit closes its
// connection. Both are logged at most once per logEvery, with the count
// of what was not logged, so a flood does not become a flood of log lines.

// connectionLimits are the limit settings, parsed once at start.
type connectionLimits struct {
	// MaxConnections is max.connections.
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip.
	MaxConnectionsPerIP int32
	// PerIPOverrides is max.connections.per.ip.overrides, in its order.
	PerIPOverrides []connectionOverride
	// MaxQueuedBytes is queued.max.request.bytes; -1 is unlimited.
	MaxQueuedBytes int64
	// MaxConnectionQueuedBytes is max.inflight.request.bytes.per.connection;
	// -1 is unlimited.
	MaxConnectionQueuedBytes int64
}

// connectionOverride is one host:count entry of
// max.connections.per.ip.overrides.
type connectionOverride struct {
	// Host is an IP address or a host name, as written (brackets of an
	// IPv6 address removed).
	Host string
	// Count is the connection limit of that host's addresses.
	Count int32
}

// parseConnectionOverrides parses Kafka's "host:count,host:count" format.
// Blank entries are skipped; the count follows the last colon, so an
// IPv6 address may be written bare ("::1:5") or bracketed ("[::1]:5").
func parseConnectionOverrides(v string) ([]connectionOverride, error) {
	var out []connectionOverride
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		at := strings.LastIndexByte(entry, ':')
		if at <= 0 || at == len(entry)-1 {
			return nil, fmt.Errorf("entry %q: want host:count", entry)
		}
		host := strings.TrimSpace(entry[:at])
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		count, err := strconv.ParseInt(strings.TrimSpace(entry[at+1:]), 10, 32)
		if err != nil || count < 0 {
			return nil, fmt.Errorf("entry %q: count %q is not a non-negative 32-bit integer", entry, entry[at+1:])
		}
		if host == "" || strings.ContainsAny(host, " []") {
			return nil, fmt.Errorf("entry %q: bad host %q", entry, host)
		}
		if seen[host] {
			return nil, fmt.Errorf("entry %q: host %s given twice", entry, host)
		}
		seen[host] = true
		out = append(out, connectionOverride{Host: host, Count: int32(count)})
	}
	return out, nil
}

// logEvery is the most often one kind of limit event is logged.
const logEvery = time.Second

// connectionLimiter enforces the limits. The connection counts are
// guarded by Broker.connsMu (acceptLoop and forgetConnection hold it);
// the byte counts by bytesMu, a leaf lock.
type connectionLimiter struct {
	limits connectionLimits
	// perIPLimit maps addresses named by the overrides to their limit.
	perIPLimit map[netip.Addr]int32
	// perIP counts open connections by client address (under connsMu);
	// an address with none is removed, so the map holds only live ones.
	perIP map[netip.Addr]int32

	bytesMu sync.Mutex
	// queued is the request bytes held by all connections (under bytesMu).
	queued int64
	// released, when not nil, is closed at the next release of bytes, to
	// wake readers waiting for room (under bytesMu).
	released chan struct{}

	refusedLog, oversizeLog logLimiter
}

// newConnectionLimiter resolves the overrides' host names (once, at
// start) and returns the limiter.
func newConnectionLimiter(ctx context.Context, limits connectionLimits) (*connectionLimiter, error) {
	l := &connectionLimiter{limits: limits, perIPLimit: map[netip.Addr]int32{}, perIP: map[netip.Addr]int32{}}
	for _, o := range limits.PerIPOverrides {
		if addr, err := netip.ParseAddr(o.Host); err == nil {
			l.perIPLimit[addr.Unmap()] = o.Count
			continue
		}
		lookup, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(lookup, "ip", o.Host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("broker: max.connections.per.ip.overrides: resolve %s: %w", o.Host, err)
		}
		for _, addr := range addrs {
			l.perIPLimit[addr.Unmap()] = o.Count
		}
	}
	return l, nil
}

// clientAddr is the IP address of a connection's peer; the zero Addr
// when it is not TCP (then only max.connections applies).
func clientAddr(netConn net.Conn) netip.Addr {
	if tcp, ok := netConn.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// admit decides whether a newly accepted connection from addr may stay,
// given open connections already open; it counts it if so. It returns
// the name of the limit that refuses it, or "". Called under connsMu.
func (l *connectionLimiter) admit(addr netip.Addr, open int) string {
	if open >= int(l.limits.MaxConnections) {
		return "max.connections"
	}
	if !addr.IsValid() {
		return ""
	}
	limit, overridden := l.perIPLimit[addr]
	if !overridden {
		limit = l.limits.MaxConnectionsPerIP
	}
	if l.perIP[addr] >= limit {
		if overridden {
			return "max.connections.per.ip.overrides"
		}
		return "max.connections.per.ip"
	}
	l.perIP[addr]++
	return ""
}

// forget uncounts a closed connection admitted from addr. Called under
// connsMu.
func (l *connectionLimiter) forget(addr netip.Addr) {
	if !addr.IsValid() {
		return
	}
	if l.perIP[addr] <= 1 {
		delete(l.perIP, addr)
		return
	}
	l.perIP[addr]--
}

// logRefused logs a refused connection, rate-limited.
func (l *connectionLimiter) logRefused(logger *slog.Logger, remote net.Addr, limit string) {
	if ok, suppressed := l.refusedLog.allow(time.Now()); ok {
		logger.Warn("connection refused: limit reached; closing it", "remote", remote.String(), "limit", limit,
			"max_connections", l.limits.MaxConnections, "max_connections_per_ip", l.limits.MaxConnectionsPerIP,
			"refusals_not_logged", suppressed)
	}
}

// byteLimits reports whether a request-byte limit is set; without one
// the readers skip the accounting entirely.
func (l *connectionLimiter) byteLimits() bool {
	return l.limits.MaxQueuedBytes >= 0 || l.limits.MaxConnectionQueuedBytes >= 0
}

// errRequestTooLarge is a request larger than a request-byte limit: it
// could never be admitted, so its connection is closed.
var errRequestTooLarge = errors.New("request larger than the in-flight request bytes limit")

// acquire reserves n request bytes for c, waiting while a limit is
// reached; it returns errRequestTooLarge for a request that could never
// fit, or the context's error if c or the broker stops first.
func (l *connectionLimiter) acquire(c *connection, n int64) error {
	perConn, total := l.limits.MaxConnectionQueuedBytes, l.limits.MaxQueuedBytes
	if (perConn >= 0 && n > perConn) || (total >= 0 && n > total) {
		return fmt.Errorf("%w: %d bytes (queued.max.request.bytes %d, max.inflight.request.bytes.per.connection %d)",
			errRequestTooLarge, n, total, perConn)
	}
	for {
		l.bytesMu.Lock()
		if (perConn < 0 || c.queued+n <= perConn) && (total < 0 || l.queued+n <= total) {
			c.queued += n
			l.queued += n
			l.bytesMu.Unlock()
			return nil
		}
		if l.released == nil {
			l.released = make(chan struct{})
		}
		released := l.released
		l.bytesMu.Unlock()
		select {
		case <-released:
		case <-c.ctx.Done():
			return c.ctx.Err()
		case <-c.broker.ctx.Done():
			return c.broker.ctx.Err()
		}
	}
}

// release returns n bytes reserved by acquire for c and wakes the readers
// waiting for room.
func (l *connectionLimiter) release(c *connection, n int64) {
	l.bytesMu.Lock()
	c.queued -= n
	l.queued -= n
	if l.released != nil {
		close(l.released)
		l.released = nil
	}
	l.bytesMu.Unlock()
}

// logOversize logs a request refused for its size, rate-limited.
func (l *connectionLimiter) logOversize(logger *slog.Logger, err error) {
	if ok, suppressed := l.oversizeLog.allow(time.Now()); ok {
		logger.Warn("closing connection: request can never fit the in-flight bytes limit", "error", err,
			"refusals_not_logged", suppressed)
	}
}

// logLimiter lets one event through per logEvery and counts the rest.
type logLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log the event happening at now, and how many
// events were not logged since the last one that was.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < logEvery {
		l.suppressed++
		return false, 0
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	return true, suppressed
}
