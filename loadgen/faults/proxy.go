package faults

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/wire"
)

// Config configures a Proxy.
type Config struct {
	// Upstreams are the seed brokers (host:port). Each gets a listener, in
	// this order (the order fixes listener ordinals, see ruleState.fires).
	Upstreams []string
	// Rules are consulted in order for every request.
	Rules []Rule
	// Seed makes probabilistic rules reproducible.
	Seed int64
	// Log receives fired faults; nil means a new log (see Proxy.Log).
	Log *EventLog
	// MaxFrameSize bounds frames in both directions; 0 means Kafka's 100 MiB.
	MaxFrameSize int32
	// Logf, when set, receives diagnostics that are not faults (a response
	// that could not be rewritten, an upstream that refused a dial).
	Logf func(format string, args ...any)
}

// Proxy is a Kafka-aware fault-injecting TCP proxy. It listens on
// 127.0.0.1 once per upstream broker, forwards frames both ways, rewrites
// broker addresses in Metadata, FindCoordinator and DescribeCluster responses
// so that clients reach every broker through it, and applies its rules.
type Proxy struct {
	seed  int64
	rules []*ruleState
	// degrades are the degrade rules (also in rules); when there are
	// any, every connection's traffic goes through netem lines.
	degrades []*ruleState
	log      *EventLog
	// startNanos is when rule windows are measured from (Unix
	// nanoseconds): New's time, until StartClock moves it to the load's
	// start. Atomic: every connection's goroutines read it.
	startNanos atomic.Int64
	maxSize    int32
	logf       func(format string, args ...any)
	done       chan struct{} // closed by Close
	wg         sync.WaitGroup

	mu         sync.Mutex // guards listeners, byUpstream, conns, closed
	listeners  []*brokerListener
	byUpstream map[string]*brokerListener
	conns      map[net.Conn]struct{}
	closed     bool
}

// brokerListener is the proxy's face for one upstream broker.
type brokerListener struct {
	proxy    *Proxy
	index    uint64 // creation ordinal
	upstream string // host:port the proxy dials
	listener net.Listener
	host     string // the listener's own host and port, advertised to clients
	port     int32

	nodeID      atomic.Int32 // learned from broker lists; -1 until known
	connections atomic.Int64 // connections accepted

	mu             sync.Mutex // guards blackholeUntil and clockSeen
	blackholeUntil time.Time
	clockSeen      map[uint64]bool // clock-driven blackhole rules already recorded

	// degradeSeen[i] is set once p.degrades[i] has applied to this
	// broker (its event recorded); atomic, so the per-frame link lookup
	// takes no lock.
	degradeSeen []atomic.Bool

	// pacers are the broker's link, to the broker [0] and to the clients
	// [1]: a degrade rule's bandwidth cap holds for all its connections.
	pacers [2]netem.Pacer
}

// New validates the rules and starts a listener for every upstream.
func New(config Config) (*Proxy, error) {
	if len(config.Upstreams) == 0 {
		return nil, errors.New("fault proxy: no upstream brokers")
	}
	p := &Proxy{
		seed:       config.Seed,
		log:        config.Log,
		maxSize:    config.MaxFrameSize,
		logf:       config.Logf,
		done:       make(chan struct{}),
		byUpstream: make(map[string]*brokerListener),
		conns:      make(map[net.Conn]struct{}),
	}
	p.startNanos.Store(time.Now().UnixNano())
	if p.log == nil {
		p.log = NewEventLog(nil)
	}
	if p.logf == nil {
		p.logf = func(string, ...any) {}
	}
	for i, rule := range config.Rules {
		if err := rule.Validate(); err != nil {
			return nil, fmt.Errorf("fault proxy: rule %d (%s): %w", i, rule, err)
		}
		state := &ruleState{rule: rule, index: uint64(i)}
		p.rules = append(p.rules, state)
		if rule.Action == ActionDegrade {
			p.degrades = append(p.degrades, state)
		}
	}
	for _, upstream := range config.Upstreams {
		if _, err := p.AddUpstream(upstream); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Log returns the proxy's event log.
func (p *Proxy) Log() *EventLog { return p.log }

// Start is when rule windows are measured from: when the proxy started,
// or the time StartClock set.
func (p *Proxy) Start() time.Time { return time.Unix(0, p.startNanos.Load()) }

// StartClock makes rule windows (after, until) count from start, the
// load's start, as process and client actions' schedules do: the clients
// connect, create topics and join groups before it, for as long as their
// mode needs.
func (p *Proxy) StartClock(start time.Time) { p.startNanos.Store(start.UnixNano()) }

// AddUpstream returns the proxy address for an upstream broker, starting a
// listener if it has none yet.
func (p *Proxy) AddUpstream(upstream string) (string, error) {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return "", fmt.Errorf("fault proxy: upstream %q: %w", upstream, err)
	}
	number, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", fmt.Errorf("fault proxy: upstream %q: bad port: %w", upstream, err)
	}
	listener, err := p.listenerFor(host, int32(number))
	if err != nil {
		return "", err
	}
	return listener.addr(), nil
}

// Addrs returns the proxy addresses of the seed upstreams and every broker
// discovered since, in creation order: use them as a client's seed brokers.
func (p *Proxy) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.listeners))
	for i, l := range p.listeners {
		out[i] = l.addr()
	}
	return out
}

// ListenerStats describes one listener.
type ListenerStats struct {
	Upstream    string // the broker's address
	Addr        string // the proxy's address for it
	NodeID      int32  // -1 until a broker list named it
	Connections int64  // client connections accepted
}

// Stats returns every listener's statistics, in creation order.
func (p *Proxy) Stats() []ListenerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ListenerStats, len(p.listeners))
	for i, l := range p.listeners {
		out[i] = ListenerStats{Upstream: l.upstream, Addr: l.addr(), NodeID: l.nodeID.Load(), Connections: l.connections.Load()}
	}
	return out
}

// Blackhole makes the broker at upstream accept and forward nothing for d,
// from now. It is the programmatic form of a blackhole rule.
func (p *Proxy) Blackhole(upstream string, d time.Duration) error {
	p.mu.Lock()
	listener := p.byUpstream[upstream]
	p.mu.Unlock()
	if listener == nil {
		return fmt.Errorf("fault proxy: no listener for upstream %s", upstream)
	}
	listener.blackhole(d, Event{Kind: KindBlackhole, APIKey: NoAPIKey, Detail: "for " + d.String()})
	return nil
}

// Close stops every listener, cuts every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	var first error
	for _, l := range p.listeners {
		if err := l.listener.Close(); err != nil && first == nil {
			first = err
		}
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return first
}

// listenerFor returns the listener for host:port, creating it on demand.
func (p *Proxy) listenerFor(host string, port int32) (*brokerListener, error) {
	upstream := net.JoinHostPort(host, strconv.Itoa(int(port)))
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.byUpstream[upstream]; l != nil {
		return l, nil
	}
	if p.closed {
		return nil, errors.New("fault proxy: closed")
	}
	netListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen for %s: %w", upstream, err)
	}
	address := netListener.Addr().(*net.TCPAddr)
	l := &brokerListener{
		proxy:       p,
		index:       uint64(len(p.listeners)),
		upstream:    upstream,
		listener:    netListener,
		host:        address.IP.String(),
		port:        int32(address.Port),
		clockSeen:   make(map[uint64]bool),
		degradeSeen: make([]atomic.Bool, len(p.degrades)),
	}
	l.nodeID.Store(-1)
	p.listeners = append(p.listeners, l)
	p.byUpstream[upstream] = l
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.serve()
	}()
	return l, nil
}

// track adds or removes a connection from the set Close cuts; it reports
// false when the proxy is already closed (the caller must close c).
func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (l *brokerListener) addr() string {
	return net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
}

// serve accepts client connections until the listener is closed; each gets
// its own goroutines (see connection).
func (l *brokerListener) serve() {
	p := l.proxy
	for {
		client, err := l.listener.Accept()
		if err != nil {
			return
		}
		ordinal := l.connections.Add(1) - 1
		if !p.track(client, true) {
			client.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(client, false)
			defer client.Close()
			c := &connection{listener: l, ordinal: uint64(ordinal), client: client}
			c.run()
		}()
	}
}

// blackhole closes the broker's gate until now+d (or keeps a later end)
// and records the event.
func (l *brokerListener) blackhole(d time.Duration, event Event) {
	until := time.Now().Add(d)
	l.mu.Lock()
	if until.After(l.blackholeUntil) {
		l.blackholeUntil = until
	}
	l.mu.Unlock()
	event.Broker = l.upstream
	l.proxy.log.Record(event)
}

// closedUntil returns when the broker's gate reopens, or the zero time when
// it is open: the later of a fired blackhole's end and the end of any
// clock-driven blackhole rule whose window contains now. The first time a
// clock-driven rule closes this broker's gate it is recorded as an event.
func (l *brokerListener) closedUntil(now time.Time) time.Time {
	p := l.proxy
	elapsed := now.Sub(p.Start())
	l.mu.Lock()
	defer l.mu.Unlock()
	until := l.blackholeUntil
	for _, s := range p.rules {
		if !s.rule.clockDriven() || !s.matchesBroker(l) {
			continue
		}
		start, end := s.rule.window()
		if elapsed < start || elapsed >= end {
			continue
		}
		if windowEnd := p.Start().Add(end); windowEnd.After(until) {
			until = windowEnd
		}
		if !l.clockSeen[s.index] {
			l.clockSeen[s.index] = true
			// Record outside the lock would be nicer, but OnEvent must not
			// block and the log has its own lock, so the order is safe.
			p.log.Record(Event{Time: now, Broker: l.upstream, Kind: KindBlackhole, APIKey: NoAPIKey,
				Detail: fmt.Sprintf("rule %s: %v to %v", s.rule, start, end)})
		}
	}
	if !until.After(now) {
		return time.Time{}
	}
	return until
}

// link is the network between this broker and its clients in one
// direction now: the degrade rules whose window contains now and whose
// broker and direction match, added up (netem.Link.Add). The first time
// a rule applies to this broker it is recorded as an event.
func (l *brokerListener) link(now time.Time, toBroker bool) netem.Link {
	p := l.proxy
	elapsed := now.Sub(p.Start())
	var link netem.Link
	for i, s := range p.degrades {
		start, end := s.rule.window()
		if elapsed < start || (end != 0 && elapsed >= end) || !s.matchesBroker(l) || !s.rule.Direction.applies(toBroker) {
			continue
		}
		link = link.Add(s.rule.Network.Link())
		if !l.degradeSeen[i].Load() && l.degradeSeen[i].CompareAndSwap(false, true) {
			window := fmt.Sprintf("from %v", start)
			if end != 0 {
				window += fmt.Sprintf(" to %v", end)
			}
			p.log.Record(Event{Time: now, Broker: l.upstream, Kind: KindDegrade, APIKey: NoAPIKey,
				Detail: fmt.Sprintf("rule %s: %s", s.rule, window)})
		}
	}
	return link
}

// waitOpen blocks while the broker is blackholed. It returns false when
// stop or the proxy closes first.
func (l *brokerListener) waitOpen(stop <-chan struct{}) bool {
	for {
		now := time.Now()
		until := l.closedUntil(now)
		if until.IsZero() {
			return true
		}
		timer := time.NewTimer(until.Sub(now))
		select {
		case <-timer.C:
		case <-stop:
			timer.Stop()
			return false
		case <-l.proxy.done:
			timer.Stop()
			return false
		}
	}
}

// pause waits for d; it returns false when stop or the proxy closes first.
func (p *Proxy) pause(d time.Duration, stop <-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-stop:
		return false
	case <-p.done:
		return false
	}
}

// hasResponse reports whether the broker answers the request: everything
// except Produce with acks=0. It reads only the head of the Produce body,
// whose layout every version shares: transactional id (v3+; compact from
// v9), then acks. A body too short to tell is assumed to expect a response.
func hasResponse(header wire.RequestHeader, body []byte) bool {
	if header.APIKey != wire.APIProduce {
		return true
	}
	r := wire.Reader{B: body}
	switch {
	case header.APIVersion >= 9:
		r.CompactNullableString()
	case header.APIVersion >= 3:
		r.NullableString()
	}
	acks := r.Int16()
	return r.Err != nil || acks != 0
}
