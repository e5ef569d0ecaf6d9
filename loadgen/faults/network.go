package faults

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/exactly-eos/exactly/internal/netem"
)

// Network is a degraded network path, in YAML: the fields of a degrade
// rule (between the clients and the brokers, in the proxy) and the
// network of a slow-follower action (between brokers). Each applies to
// one direction; a rule's direction says which (both by default).
//
//	delay: 10ms             # one-way delay added (a round trip both ways: twice it)
//	jitter: 2ms             # spread of the delay
//	distribution: normal    # of the jitter: uniform (default; delay ± jitter) or normal (jitter = standard deviation)
//	rate: 10MB/s            # bandwidth cap (B KB MB GB KiB MiB GiB per second, or kbit mbit gbit)
//	loss: 0.001             # probability a 1448-byte segment is lost: its data waits a retransmission
//	retransmit: 200ms       # how long a loss holds data (default 200ms, Linux's minimum RTO)
//
// Package internal/netem documents the model: in-order delivery, the
// pacing of the cap, the loss as a TCP retransmission.
type Network struct {
	Delay        Duration           `yaml:"delay,omitempty"`
	Jitter       Duration           `yaml:"jitter,omitempty"`
	Distribution netem.Distribution `yaml:"distribution,omitempty"`
	Rate         Rate               `yaml:"rate,omitempty"`
	Loss         float64            `yaml:"loss,omitempty"`
	Retransmit   Duration           `yaml:"retransmit,omitempty"`
}

// Link is the network as netem applies it.
func (n Network) Link() netem.Link {
	return netem.Link{Delay: n.Delay.std(), Jitter: n.Jitter.std(), Distribution: n.Distribution,
		Rate: int64(n.Rate), Loss: n.Loss, Retransmit: n.Retransmit.std()}
}

// Validate reports a network that cannot be applied.
func (n Network) Validate() error { return n.Link().Validate() }

// Zero reports whether the network impairs nothing.
func (n Network) Zero() bool { return n.Link().Zero() }

// String describes the network ("delay 10ms ±2ms normal, rate 10MB/s").
func (n Network) String() string { return n.Link().String() }

// Direction says which way a degrade rule's network applies.
type Direction string

// Directions.
const (
	// DirectionBoth impairs requests and responses alike (the default).
	DirectionBoth Direction = "both"
	// DirectionToBroker impairs what clients send (requests).
	DirectionToBroker Direction = "to-broker"
	// DirectionToClient impairs what brokers send (responses).
	DirectionToClient Direction = "to-client"
)

// applies reports whether the direction covers traffic to the broker
// (toBroker) or to the client.
func (d Direction) applies(toBroker bool) bool {
	switch d {
	case DirectionToBroker:
		return toBroker
	case DirectionToClient:
		return !toBroker
	}
	return true
}

// Rate is a bandwidth in bytes per second that reads from YAML as text
// ("10MB/s", "100mbit"; see netem.ParseRate).
type Rate int64

// UnmarshalYAML parses rate text.
func (r *Rate) UnmarshalYAML(node *yaml.Node) error {
	rate, err := netem.ParseRate(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*r = Rate(rate)
	return nil
}

// MarshalYAML writes rate text.
func (r Rate) MarshalYAML() (any, error) { return netem.FormatRate(int64(r)), nil }
