package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// This file holds the broker's listeners, in Kafka's terms:
//
//   - listeners names each endpoint, NAME://host:port, e.g.
//     PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093 (port 0: any
//     free port; an empty host: every interface).
//   - listener.security.protocol.map gives each name its security
//     protocol, NAME:PROTOCOL,...; its default maps PLAINTEXT, SSL,
//     SASL_PLAINTEXT and SASL_SSL to themselves, and a map that is set
//     replaces the default whole, as in Kafka.
//   - advertised.listeners, same syntax, is the address Metadata,
//     FindCoordinator and DescribeCluster tell a client that came in on
//     that listener; a listener it does not name advertises its own
//     address (an unspecified IP replaced by the host name).
//
// Names are case-insensitive and normalised to upper case, as Kafka's
// ListenerName does. When listeners is unset the broker has one
// PLAINTEXT listener named PLAINTEXT on Config.Listen, advertising
// Config.Advertised: the broker as it was before listeners existed. When
// it is set it wins over Config.Listen, and Config.Advertised must be
// empty (advertised.listeners takes its place).
//
// Each listener has its own accept loop (acceptLoop); a connection takes
// its listener's protocol (connection.protocol) and, on a TLS listener,
// is wrapped in a tls.Conn whose handshake runs on the connection's own
// goroutine (connection.handshake), never in the accept loop.

// defaultProtocolMap is listener.security.protocol.map's default.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// listenerSpec is one configured listener, parsed by parseListenerSpecs.
type listenerSpec struct {
	// Name is the listener's name, upper case.
	Name string
	// Protocol is its security protocol (listener.security.protocol.map).
	Protocol SecurityProtocol
	// Address is the host:port to bind.
	Address string
	// Advertised is the host:port to advertise; "" is the bound address.
	Advertised string
	// TLS are the listener's ssl.* settings (listener.name.<name>.ssl.*
	// over the unprefixed ones); used only when Protocol.TLS().
	TLS tlsSettings
}

// listener is one open listener of a running broker; read-only once
// Start returns.
type listener struct {
	name     string
	protocol SecurityProtocol
	net      net.Listener
	// advertisedHost and advertisedPort are what clients connected here
	// are told to connect to.
	advertisedHost string
	advertisedPort int32
	// tls is the server configuration of a TLS listener, nil otherwise.
	tls *tls.Config
	// failedHandshakes rate-limits the log lines of failed handshakes.
	failedHandshakes logLimiter
}

// endpoint is one NAME://host:port entry.
type endpoint struct {
	name, host, port string
}

func (e endpoint) address() string { return net.JoinHostPort(e.host, e.port) }

// parseEndpoints parses Kafka's listeners syntax: comma-separated
// NAME://host:port, IPv6 hosts in brackets. Blank entries are skipped.
func parseEndpoints(v string) ([]endpoint, error) {
	var out []endpoint
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, hostPort, ok := strings.Cut(entry, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q: want NAME://host:port", entry)
		}
		name = strings.ToUpper(strings.TrimSpace(name))
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", entry, err)
		}
		number, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("entry %q: port %q is not 0–65535", entry, port)
		}
		port = strconv.FormatUint(number, 10)
		if seen[name] {
			return nil, fmt.Errorf("entry %q: listener name %s given twice", entry, name)
		}
		seen[name] = true
		out = append(out, endpoint{name: name, host: host, port: port})
	}
	return out, nil
}

// parseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL,...
func parseProtocolMap(v string) (map[string]SecurityProtocol, error) {
	out := map[string]SecurityProtocol{}
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, protocolName, ok := strings.Cut(entry, ":")
		name = strings.ToUpper(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q: want NAME:PROTOCOL", entry)
		}
		protocol, err := ParseSecurityProtocol(protocolName)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", entry, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("entry %q: listener name %s mapped twice", entry, name)
		}
		out[name] = protocol
	}
	return out, nil
}

// validateEndpoints is the table's check of listeners and
// advertised.listeners.
func validateEndpoints(v string) error {
	_, err := parseEndpoints(v)
	return err
}

// validateProtocolMap is the table's check of
// listener.security.protocol.map.
func validateProtocolMap(v string) error {
	_, err := parseProtocolMap(v)
	return err
}

// parseListenerSpecs combines listeners, listener.security.protocol.map
// and advertised.listeners (each already syntax-checked) into specs, in
// listeners' order; tlsFor gives each listener its ssl.* settings.
func parseListenerSpecs(listeners, protocolMap, advertised string, tlsFor func(name string) (tlsSettings, error)) ([]listenerSpec, error) {
	endpoints, err := parseEndpoints(listeners)
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	if len(endpoints) == 0 {
		return nil, errors.New("listeners: no listener given")
	}
	protocols, err := parseProtocolMap(protocolMap)
	if err != nil {
		return nil, fmt.Errorf("listener.security.protocol.map: %w", err)
	}
	advertisedEndpoints, err := parseEndpoints(advertised)
	if err != nil {
		return nil, fmt.Errorf("advertised.listeners: %w", err)
	}
	specs := make([]listenerSpec, 0, len(endpoints))
	ports := map[string]string{}
	for _, e := range endpoints {
		protocol, ok := protocols[e.name]
		if !ok {
			return nil, fmt.Errorf("listeners: listener %s has no security protocol in listener.security.protocol.map (%s)", e.name, protocolMap)
		}
		if other, dup := ports[e.port]; dup && e.port != "0" {
			return nil, fmt.Errorf("listeners: %s and %s both use port %s", other, e.name, e.port)
		}
		ports[e.port] = e.name
		spec := listenerSpec{Name: e.name, Protocol: protocol, Address: e.address()}
		if protocol.TLS() {
			if spec.TLS, err = tlsFor(e.name); err != nil {
				return nil, err
			}
		}
		specs = append(specs, spec)
	}
	for _, a := range advertisedEndpoints {
		i := specIndex(specs, a.name)
		if i < 0 {
			return nil, fmt.Errorf("advertised.listeners: %s is not one of listeners", a.name)
		}
		if ip := net.ParseIP(a.host); a.host == "" || (ip != nil && ip.IsUnspecified()) {
			return nil, fmt.Errorf("advertised.listeners: %s: advertise a host clients can reach, not %q", a.name, a.host)
		}
		if a.port == "0" {
			return nil, fmt.Errorf("advertised.listeners: %s: port 0 cannot be advertised", a.name)
		}
		specs[i].Advertised = a.address()
	}
	return specs, nil
}

func specIndex(specs []listenerSpec, name string) int {
	for i, s := range specs {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// listenerSpecs are the listeners Start opens: the listeners settings, or
// Config.Listen as one PLAINTEXT listener when they are unset.
func listenerSpecs(cfg Config, s settings) ([]listenerSpec, error) {
	if s.Listeners == nil {
		listen := cfg.Listen
		if listen == "" {
			listen = "127.0.0.1:9092"
		}
		return []listenerSpec{{Name: "PLAINTEXT", Protocol: Plaintext, Address: listen, Advertised: cfg.Advertised}}, nil
	}
	if cfg.Advertised != "" {
		return nil, errors.New("broker: Config.Advertised (--advertised) is for Config.Listen; with listeners set, use advertised.listeners")
	}
	return s.Listeners, nil
}

// interBrokerListener is the index in specs of the listener other brokers
// reach this one on (inter.broker.listener.name, given as name; when ""
// the listener named PLAINTEXT, else the first PLAINTEXT one, else the
// first). A cluster member's must be PLAINTEXT: its peers' clients (replica
// fetchers, markers, KIP-890 requests) speak neither TLS nor SASL.
func interBrokerListener(specs []listenerSpec, name string, member bool) (int, error) {
	index := -1
	switch {
	case name != "":
		index = slices.IndexFunc(specs, func(s listenerSpec) bool { return s.Name == name })
		if index < 0 {
			names := make([]string, len(specs))
			for i, s := range specs {
				names[i] = s.Name
			}
			return -1, fmt.Errorf("broker: inter.broker.listener.name=%s names no listener (listeners: %s)", name, strings.Join(names, ", "))
		}
	default:
		index = slices.IndexFunc(specs, func(s listenerSpec) bool { return s.Name == "PLAINTEXT" })
		if index < 0 {
			index = slices.IndexFunc(specs, func(s listenerSpec) bool { return s.Protocol == Plaintext })
		}
		if index < 0 {
			index = 0
		}
	}
	if member && specs[index].Protocol != Plaintext {
		return -1, fmt.Errorf("broker: inter-broker listener %s is %s; brokers of a cluster reach each other in plaintext: add a PLAINTEXT listener (on an address only the brokers reach) and name it in inter.broker.listener.name", specs[index].Name, specs[index].Protocol)
	}
	return index, nil
}

// openListeners binds every listener; on error it closes those it opened.
func openListeners(specs []listenerSpec) ([]*listener, error) {
	var out []*listener
	fail := func(err error) ([]*listener, error) {
		for _, l := range out {
			l.net.Close()
		}
		return nil, err
	}
	for _, spec := range specs {
		l := &listener{name: spec.Name, protocol: spec.Protocol}
		if spec.Protocol.TLS() {
			config, err := spec.TLS.serverConfig()
			if err != nil {
				return fail(fmt.Errorf("broker: listener %s (%s): %w", spec.Name, spec.Protocol, err))
			}
			l.tls = config
		}
		netListener, err := net.Listen("tcp", spec.Address)
		if err != nil {
			return fail(fmt.Errorf("broker: listen %s (%s): %w", spec.Name, spec.Address, err))
		}
		l.net = netListener
		out = append(out, l)
		if err := l.setAdvertised(spec.Advertised); err != nil {
			return fail(fmt.Errorf("broker: listener %s: %w", spec.Name, err))
		}
	}
	return out, nil
}

// setAdvertised sets what the listener advertises: advertised, or its
// bound address with an unspecified IP replaced by the host name.
func (l *listener) setAdvertised(advertised string) error {
	if advertised == "" {
		host, port, _ := net.SplitHostPort(l.net.Addr().String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if name, err := os.Hostname(); err == nil {
				host = name
			}
		}
		advertised = net.JoinHostPort(host, port)
	}
	host, portText, err := net.SplitHostPort(advertised)
	if err != nil {
		return fmt.Errorf("advertised address %q: %w", advertised, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return fmt.Errorf("advertised port %q: %w", portText, err)
	}
	l.advertisedHost, l.advertisedPort = host, int32(port)
	return nil
}

// ListenerAddr returns the actual host:port the named listener (any
// case) is bound to, "" when the broker has no such listener. Without
// the listeners setting the one listener is named PLAINTEXT.
func (b *Broker) ListenerAddr(name string) string {
	name = strings.ToUpper(name)
	for _, l := range b.listeners {
		if l.name == name {
			return l.net.Addr().String()
		}
	}
	return ""
}

// Listeners returns every listener as NAME://host:port with its actual
// address, in the listeners setting's order.
func (b *Broker) Listeners() []string {
	out := make([]string, 0, len(b.listeners))
	for _, l := range b.listeners {
		out = append(out, l.name+"://"+l.net.Addr().String())
	}
	return out
}

// advertised is the host and port to tell a client that connected through
// the listener named listener to connect to: that listener's advertised
// address (the broker's own, the inter-broker listener's, for "": a
// connection made without a listener, in tests).
func (b *Broker) advertised(listener string) (string, int32) {
	if listener != "" {
		for _, l := range b.listeners {
			if l.name == listener {
				return l.advertisedHost, l.advertisedPort
			}
		}
	}
	return b.advertisedHost, b.advertisedPort
}
