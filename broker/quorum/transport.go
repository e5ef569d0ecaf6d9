package quorum

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// sourceDialer returns the dialer of the node's outbound connections (raft
// and the forwarding RPC): from source, an IP address, when it is set, so
// a partition proxy in front of the other nodes can tell this node's
// connections apart; else the system's choice, as net.Dialer does.
func sourceDialer(source string) (net.Dialer, error) {
	if source == "" {
		return net.Dialer{}, nil
	}
	ip := net.ParseIP(source)
	if ip == nil {
		return net.Dialer{}, fmt.Errorf("quorum: source address %q is not an IP address", source)
	}
	return net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}, nil
}

// streamLayer is raft's network layer: it accepts on the bind listener,
// advertises the configured voter address (which may be a proxy's, not the
// listener's), and dials from the node's source address.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dialer    net.Dialer
}

// newStreamLayer listens on bind and advertises advertise.
func newStreamLayer(bind, advertise string, dialer net.Dialer) (*streamLayer, error) {
	addr, err := net.ResolveTCPAddr("tcp", advertise)
	if err != nil {
		return nil, fmt.Errorf("quorum: raft address %q: %w", advertise, err)
	}
	if addr.IP == nil || addr.IP.IsUnspecified() {
		return nil, fmt.Errorf("quorum: raft address %q is not an address other nodes can reach", advertise)
	}
	listener, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("quorum: raft listen %s: %w", bind, err)
	}
	return &streamLayer{Listener: listener, advertise: addr, dialer: dialer}, nil
}

// Dial connects to another node's raft address within timeout.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	dialer := s.dialer
	dialer.Timeout = timeout
	return dialer.Dial("tcp", string(address))
}

// Addr is the advertised address (raft's LocalAddr).
func (s *streamLayer) Addr() net.Addr { return s.advertise }
