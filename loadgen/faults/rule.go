package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/wire"
)

// Action is what a proxy rule does when it fires.
type Action string

// Proxy rule actions.
const (
	// ActionDropRequest swallows the request and cuts the connection: the
	// broker never sees it (seed §2.2, "the broker died before writing").
	ActionDropRequest Action = "drop-request"
	// ActionDropResponse forwards the request, swallows its response and
	// cuts the connection: written but not acknowledged (seed §2.2).
	ActionDropResponse Action = "drop-response"
	// ActionDelay holds the request (phase request) or its response (phase
	// response) for Duration before forwarding it. Later traffic on the same
	// connection waits behind it, as on a slow TCP stream.
	ActionDelay Action = "delay"
	// ActionReset resets the client connection (RST: SO_LINGER 0, close) and
	// closes the upstream one, before forwarding the request (phase request)
	// or in place of its response (phase response).
	ActionReset Action = "reset"
	// ActionBlackhole makes the broker accept nothing and forward nothing
	// for Duration: traffic in both directions is held (not lost), new
	// connections are accepted by the kernel but hang, so clients see
	// timeouts. A blackhole rule with no trigger (no probability, every or
	// first) is driven by the clock alone: the broker is blackholed from
	// After to Until (or After+Duration). With a trigger it starts when a
	// matching request arrives, and that request is held too.
	ActionBlackhole Action = "blackhole"
	// ActionDegrade slows the network between the clients and the broker
	// (every broker, or the one the rule names) inside the rule's window:
	// every byte each way is delayed by the rule's network (delay with
	// jitter, bandwidth cap, loss; see Network), the way a path across a
	// zone or region would, while the connection keeps pipelining. It has
	// no trigger and no API list: a network slows everything. A degrade
	// rule with a zero network sends the traffic through the same path
	// without impairment (a sweep's reference).
	ActionDegrade Action = "degrade"
)

var actions = []Action{ActionDropRequest, ActionDropResponse, ActionDelay, ActionReset, ActionBlackhole, ActionDegrade}

// Phase says whether a delay or reset acts on the request or its response.
type Phase string

// Phases.
const (
	PhaseRequest  Phase = "request"
	PhaseResponse Phase = "response"
)

// Rule is one proxy fault, as data. A rule matches a request by API key and
// optionally broker; among matching requests inside its time window it fires
// by probability, on every Nth, on the first N, or (with none of those) on
// every match.
//
// In YAML:
//
//	rules:
//	  - name: lose produce acks      # optional, shown in events
//	    action: drop-response        # drop-request | drop-response | delay | reset | blackhole
//	    apis: [Produce]              # API names or numbers; omitted: every API
//	    broker: 127.0.0.1:9092       # upstream address; omitted: every broker
//	    node: 1                      # node id (learned from Metadata); omitted: every node
//	    probability: 0.05            # or every: 10, or first: 3 (at most one)
//	    after: 2s                    # window start from the load's start (the proxy's start until the load starts; default 0)
//	    until: 30s                   # window end (default: none)
//	    phase: response              # delay and reset: request (default) or response
//	    duration: 200ms              # delay: how long; blackhole: how long
//
// A degrade rule has no trigger and no apis; its network fields and
// direction (see Network):
//
//   - action: degrade
//     direction: both              # to-broker | to-client | both (default)
//     delay: 10ms                  # one-way: with both, a 20 ms round trip
//     jitter: 2ms
//     distribution: normal
//     rate: 10MB/s
//     loss: 0.001
//     after: 5s                    # optional window, as for the other rules
//     until: 15s
type Rule struct {
	Name        string   `yaml:"name,omitempty"`
	Action      Action   `yaml:"action"`
	APIs        []APIKey `yaml:"apis,omitempty"`
	Broker      string   `yaml:"broker,omitempty"`
	Node        *int32   `yaml:"node,omitempty"`
	Probability *float64 `yaml:"probability,omitempty"`
	Every       int64    `yaml:"every,omitempty"`
	First       int64    `yaml:"first,omitempty"`
	After       Duration `yaml:"after,omitempty"`
	Until       Duration `yaml:"until,omitempty"`
	Phase       Phase    `yaml:"phase,omitempty"`
	Duration    Duration `yaml:"duration,omitempty"`
	// Network and Direction are a degrade rule's.
	Network   `yaml:",inline"`
	Direction Direction `yaml:"direction,omitempty"`
}

// Validate reports the first problem that makes the rule unusable.
func (r Rule) Validate() error {
	known := false
	for _, action := range actions {
		known = known || r.Action == action
	}
	if !known {
		return fmt.Errorf("action %q is not one of %v", r.Action, actions)
	}
	triggers := 0
	if r.Probability != nil {
		triggers++
		if p := *r.Probability; !(p >= 0 && p <= 1) {
			return fmt.Errorf("probability %v is outside [0, 1]", p)
		}
	}
	if r.Every != 0 {
		triggers++
		if r.Every < 0 {
			return fmt.Errorf("every %d: must be positive (fire on every Nth matching request)", r.Every)
		}
	}
	if r.First != 0 {
		triggers++
		if r.First < 0 {
			return fmt.Errorf("first %d: must be positive (fire on the first N matching requests)", r.First)
		}
	}
	if triggers > 1 {
		return errors.New("probability, every and first are exclusive: give at most one")
	}
	if r.Action == ActionDegrade {
		return r.validateDegrade(triggers)
	}
	if !r.Network.Zero() || r.Direction != "" {
		return fmt.Errorf("delay, jitter, distribution, rate, loss, retransmit and direction apply to degrade only, not %s (a delay rule holds single requests: it takes a duration)", r.Action)
	}
	switch {
	case r.After < 0 || r.Until < 0 || r.Duration < 0:
		return errors.New("after, until and duration must not be negative")
	case r.Until != 0 && r.Until <= r.After:
		return fmt.Errorf("until (%v) must be later than after (%v)", r.Until, r.After)
	case r.Phase != "" && r.Phase != PhaseRequest && r.Phase != PhaseResponse:
		return fmt.Errorf("phase %q is not request or response", r.Phase)
	case r.Phase != "" && r.Action != ActionDelay && r.Action != ActionReset:
		return fmt.Errorf("phase applies to delay and reset only, not %s", r.Action)
	case r.Action == ActionDelay && r.Duration == 0:
		return errors.New("delay needs a duration")
	case r.Action == ActionBlackhole && r.Duration == 0 && (triggers > 0 || r.Until == 0):
		return errors.New("blackhole needs a duration (or, when driven by the clock alone, an until)")
	case r.clockDriven() && len(r.APIs) > 0:
		return errors.New("apis does not apply to a blackhole driven by the clock alone (it stops the whole broker); add a trigger (probability, every or first) to start it on a request")
	case r.Duration != 0 && r.Action != ActionDelay && r.Action != ActionBlackhole:
		return fmt.Errorf("duration applies to delay and blackhole only, not %s", r.Action)
	}
	return nil
}

// validateDegrade checks a degrade rule, which has triggers triggers.
func (r Rule) validateDegrade(triggers int) error {
	switch {
	case triggers > 0:
		return errors.New("degrade has no probability, every or first: the network is slow for the whole window (after, until)")
	case len(r.APIs) > 0:
		return errors.New("apis does not apply to degrade: a slow network slows every byte, whatever the request")
	case r.Phase != "" || r.Duration != 0:
		return errors.New("phase and duration do not apply to degrade: give delay (one way) and direction")
	case r.After < 0 || r.Until < 0:
		return errors.New("after and until must not be negative")
	case r.Until != 0 && r.Until <= r.After:
		return fmt.Errorf("until (%v) must be later than after (%v)", r.Until, r.After)
	case r.Direction != "" && r.Direction != DirectionBoth && r.Direction != DirectionToBroker && r.Direction != DirectionToClient:
		return fmt.Errorf("direction %q is not %s, %s or %s", r.Direction, DirectionBoth, DirectionToBroker, DirectionToClient)
	}
	return r.Network.Validate()
}

// String names the rule for events: its name, or its action and APIs.
func (r Rule) String() string {
	if r.Name != "" {
		return r.Name
	}
	names := make([]string, len(r.APIs))
	for i, key := range r.APIs {
		names[i] = wire.APIName(int16(key))
	}
	if r.Action == ActionDegrade {
		direction := r.Direction
		if direction == "" {
			direction = DirectionBoth
		}
		return fmt.Sprintf("degrade %s (%s)", direction, r.Network)
	}
	if len(names) == 0 {
		return string(r.Action)
	}
	return string(r.Action) + " " + strings.Join(names, ",")
}

// actsOnResponse reports whether the rule acts when the response arrives.
func (r Rule) actsOnResponse() bool {
	return r.Action == ActionDropResponse || r.Phase == PhaseResponse
}

// clockDriven reports whether the rule is a blackhole with no trigger.
func (r Rule) clockDriven() bool {
	return r.Action == ActionBlackhole && r.Probability == nil && r.Every == 0 && r.First == 0
}

// window returns the rule's time window relative to Proxy.Start; end
// is 0 when open.
func (r Rule) window() (start, end time.Duration) {
	end = time.Duration(r.Until)
	if r.clockDriven() && end == 0 {
		end = time.Duration(r.After) + time.Duration(r.Duration)
	}
	return time.Duration(r.After), end
}

// ruleState is a rule plus its match counter. The counter is shared by
// every connection (atomic), so every/first count matching requests across
// the whole proxy in the order they are consulted.
type ruleState struct {
	rule    Rule
	index   uint64
	matched atomic.Int64
}

// matches reports whether the request is in the rule's scope and window.
func (s *ruleState) matches(apiKey int16, broker *brokerListener, elapsed time.Duration) bool {
	r := &s.rule
	if len(r.APIs) > 0 {
		found := false
		for _, key := range r.APIs {
			found = found || int16(key) == apiKey
		}
		if !found {
			return false
		}
	}
	if !s.matchesBroker(broker) {
		return false
	}
	start, end := r.window()
	return elapsed >= start && (end == 0 || elapsed < end)
}

func (s *ruleState) matchesBroker(broker *brokerListener) bool {
	if s.rule.Broker != "" && s.rule.Broker != broker.upstream {
		return false
	}
	return s.rule.Node == nil || *s.rule.Node == broker.nodeID.Load()
}

// requestCoordinates identifies a request for the probability hash.
type requestCoordinates struct {
	listener, connection, request uint64
}

// fires counts a matching request and decides whether the rule fires on it.
//
// Probability is a pure function of (seed, rule index, listener ordinal,
// connection ordinal, request ordinal on the connection): no shared RNG, so
// the decision for a request does not depend on what other connections did.
// Listener ordinals follow the seed brokers' order, then discovery order;
// connection ordinals follow accept order on a listener. The same seed
// therefore fires on the same requests whenever each broker sees its
// connections opened in the same order (one client connection per broker,
// as in the tests, is the simple case). Every and first count across the
// whole proxy and are deterministic when requests are consulted in a fixed
// order (for example one connection).
func (s *ruleState) fires(seed int64, at requestCoordinates) bool {
	n := s.matched.Add(1)
	r := &s.rule
	switch {
	case r.Every > 0:
		return n%r.Every == 0
	case r.First > 0:
		return n <= r.First
	case r.Probability != nil:
		return netem.Unit(uint64(seed), s.index, at.listener, at.connection, at.request) < *r.Probability
	default:
		return true
	}
}

// APIKey is a Kafka API key that reads from YAML as Kafka's name
// ("Produce", case-insensitive) or a number.
type APIKey int16

// UnmarshalYAML accepts an API name or number.
func (k *APIKey) UnmarshalYAML(node *yaml.Node) error {
	key, err := ParseAPIKey(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*k = key
	return nil
}

// MarshalYAML writes Kafka's name for the key.
func (k APIKey) MarshalYAML() (any, error) { return wire.APIName(int16(k)), nil }

// maxAPIKey is the highest key wire names.
const maxAPIKey = wire.APIUnregisterController

// ParseAPIKey parses an API name (as Kafka spells it, any case) or number.
func ParseAPIKey(text string) (APIKey, error) {
	text = strings.TrimSpace(text)
	if number, err := strconv.Atoi(text); err == nil {
		if number < 0 || number > int(maxAPIKey) {
			return 0, fmt.Errorf("api key %d is outside 0..%d", number, maxAPIKey)
		}
		return APIKey(number), nil
	}
	for key := int16(0); key <= maxAPIKey; key++ {
		if strings.EqualFold(wire.APIName(key), text) {
			return APIKey(key), nil
		}
	}
	return 0, fmt.Errorf("unknown API %q (use Kafka's name, e.g. Produce, Fetch, OffsetCommit, or a number)", text)
}

// Duration is a time.Duration that reads from YAML as Go duration text
// ("250ms", "10s").
type Duration time.Duration

// UnmarshalYAML parses duration text.
func (d *Duration) UnmarshalYAML(node *yaml.Node) error {
	parsed, err := time.ParseDuration(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: duration %q: want Go duration text such as 500ms or 10s", node.Line, node.Value)
	}
	*d = Duration(parsed)
	return nil
}

// MarshalYAML writes duration text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// String renders the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }

// std is the duration as a time.Duration.
func (d Duration) std() time.Duration { return time.Duration(d) }
