package main

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker"
	"github.com/exactly-eos/exactly/internal/suggest"
)

// This file maps a Kafka server.properties — Kafka 4.x's KRaft file, in
// combined mode (process.roles=broker,controller) or not — onto `exactly
// broker`: its flags, its broker settings, and the keys it ignores. The
// same mapping applies to --config key=value. serverPropRules is the
// table; every key not in it must be a broker setting (the broker's
// settings table: [broker.CheckProperty], [broker.BrokerSettingNames]),
// else it is refused with a did-you-mean.

// propAction is what the broker command does with one key.
type propAction int

const (
	// propFlag: the value becomes a flag's (unless that flag was given).
	propFlag propAction = iota
	// propQuorum: read to decide cluster membership, the quorum and this
	// member's Raft address (serverProps.apply).
	propQuorum
	// propListener: a broker setting, passed on once the controller
	// listeners are taken out of it.
	propListener
	// propIgnore: accepted, not used; one line on stderr says why.
	propIgnore
)

// propRule is one row of the table: a key (or, ending in ".", every key
// with that prefix), what happens to it, and why.
type propRule struct {
	key    string
	action propAction
	// target is the flag a propFlag or propQuorum key stands for, if any.
	target string
	reason string
}

// internalRF and internalMinISR say how the internal topics' replication
// is chosen (clusternode.Start, which sets
// [broker.ReplicationConfig].InternalReplicationFactor, and the broker's
// ensureInternalTopic and internalTopicOverrides).
const (
	internalRF     = "derived, not set: 1 on a single broker, in a cluster min(3, members in controller.quorum.voters)"
	internalMinISR = "derived, not set: the internal topics' min.insync.replicas is min(2, their replication factor)"
)

// serverPropRules maps Kafka's server.properties keys that are not
// exactly's broker settings. Broker settings (num.partitions,
// log.retention.*, log.segment.bytes, socket.request.max.bytes, ...) pass
// through unchanged and are not listed.
var serverPropRules = []propRule{
	// Identity and storage.
	{"node.id", propFlag, "--node-id", "this member's broker id and quorum node id"},
	{"broker.id", propFlag, "--node-id", "Kafka's older name for node.id; if both are given they must agree"},
	{"log.dirs", propFlag, "--data-dir", "exactly keeps one data directory: more than one is refused"},
	{"log.dir", propFlag, "--data-dir", "used when log.dirs is not given, as in Kafka"},

	// The cluster.
	{"process.roles", propQuorum, "", "broker,controller: a cluster member that votes (combined mode); broker: a member that does not vote; controller alone is refused (there are no controller-only nodes)"},
	{"controller.quorum.voters", propQuorum, "--controller-quorum", "id@host:port,...: each voter's Raft transport on that port, the quorum's RPC on port+100; the three lowest ids vote"},
	{"controller.quorum.bootstrap.servers", propQuorum, "", "without controller.quorum.voters only Kafka's standalone shape maps (one address, this node's own controller listener: a one-member quorum); otherwise refused, the voters' ids are needed"},
	{"controller.listener.names", propQuorum, "--controller-listen", "the first name's entry in listeners is where this member's Raft transport listens (its RPC on port+100); the controller listeners are taken out of the client listeners"},
	{"inter.broker.listener.name", propListener, "", "the listener the other members fetch from and send transaction requests to; a cluster member's must be a PLAINTEXT listener"},
	{"security.inter.broker.protocol", propQuorum, "", "accepted when PLAINTEXT"},

	// Listeners: broker settings, less the controller listeners.
	{"listeners", propListener, "", "the client listeners"},
	{"advertised.listeners", propListener, "", "what clients are told to connect to"},
	{"listener.security.protocol.map", propListener, "", "each listener's protocol; the controller listener must be PLAINTEXT"},

	// Harmless keys exactly does not implement.
	{"num.network.threads", propIgnore, "", "connections are served by goroutines, not a network thread pool"},
	{"num.io.threads", propIgnore, "", "requests are served by goroutines, not an I/O thread pool"},
	{"background.threads", propIgnore, "", "background work runs in goroutines, not a thread pool"},
	{"socket.send.buffer.bytes", propIgnore, "", "the operating system's socket buffer sizes are used"},
	{"socket.receive.buffer.bytes", propIgnore, "", "the operating system's socket buffer sizes are used"},
	{"num.recovery.threads.per.data.dir", propIgnore, "", "partition logs are recovered at start without a thread setting"},
	{"offsets.topic.replication.factor", propIgnore, "", "__consumer_offsets' replication factor is " + internalRF},
	{"transaction.state.log.replication.factor", propIgnore, "", "__transaction_state's replication factor is " + internalRF},
	{"transaction.state.log.min.isr", propIgnore, "", internalMinISR},
	{"share.coordinator.", propIgnore, "", "share groups (KIP-932) keep their state through the group coordinator; there is no share coordinator to configure"},
	{"log.flush.interval.messages", propIgnore, "", "exactly's fsync policy is log.fsync (never, interval:<duration> or always)"},
	{"log.flush.interval.ms", propIgnore, "", "exactly's fsync policy is log.fsync (never, interval:<duration> or always)"},
	{"metadata.log.dir", propIgnore, "", "the Raft log is kept in <data-dir>/quorum"},
	{"zookeeper.", propIgnore, "", "ZooKeeper is not used (KRaft only, as in Kafka 4)"},
}

// findPropRule returns the table's row for key.
func findPropRule(key string) (propRule, bool) {
	for _, r := range serverPropRules {
		if r.key == key || (strings.HasSuffix(r.key, ".") && strings.HasPrefix(key, r.key)) {
			return r, true
		}
	}
	return propRule{}, false
}

// propEntry is one key=value and where it was given: "server.properties
// line 7" or "--config".
type propEntry struct {
	key, value, where string
	fromFile          bool
}

// readPropEntries reads the --config-file entries (if any), then the
// --config ones, in the order given (later wins).
func readPropEntries(configFile string, configs []string) ([]propEntry, error) {
	var out []propEntry
	if configFile != "" {
		entries, err := broker.ReadPropertiesFile(configFile)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, propEntry{key: e.Key, value: e.Value, fromFile: true,
				where: fmt.Sprintf("%s line %d", filepath.Base(configFile), e.Line)})
		}
	}
	for _, entry := range configs {
		key, value, ok := strings.Cut(entry, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, usageError("--config %q: want key=value", entry)
		}
		out = append(out, propEntry{key: strings.TrimSpace(key), value: strings.TrimSpace(value), where: "--config"})
	}
	return out, nil
}

// serverProps is a server.properties after classification: the broker
// settings, and the other keys as last given.
type serverProps struct {
	settings map[string]string    // broker settings, checked
	origin   map[string]propEntry // each key's last entry (settings and mapped keys)
	ignored  []string             // one line per ignored key
}

// classifyProps sorts entries by the table: mapped keys are kept for
// apply, ignored ones noted once each, broker settings checked. An
// unknown key is an error with the closest known key.
func classifyProps(entries []propEntry) (*serverProps, error) {
	p := &serverProps{settings: map[string]string{}, origin: map[string]propEntry{}}
	noted := map[string]bool{}
	for _, e := range entries {
		rule, ok := findPropRule(e.key)
		switch {
		case ok && rule.action == propIgnore:
			if !noted[e.key] {
				noted[e.key] = true
				p.ignored = append(p.ignored, fmt.Sprintf("ignoring %s (%s): %s", e.key, e.where, rule.reason))
			}
			continue
		case ok && rule.action != propListener:
			p.origin[e.key] = e
			continue
		}
		// default.replication.factor is checked once the mode is known:
		// a cluster member takes more than 1 (clusternode.Config).
		if e.key != "default.replication.factor" {
			if err := broker.CheckProperty(e.key, e.value); err != nil {
				return nil, propError(e, err)
			}
		}
		p.settings[e.key] = e.value
		p.origin[e.key] = e
	}
	return p, nil
}

// propError words a broker setting's refusal with where it was given; an
// unknown key gets a did-you-mean over every key the command accepts.
func propError(e propEntry, err error) error {
	if unknown, ok := err.(*broker.UnknownSettingError); ok {
		unknown.Where = e.where
		unknown.Closest = suggest.Closest(e.key, knownPropKeys())
		return usageError("%s", unknown.Error())
	}
	return usageError("%s (%s)", err, e.where)
}

// knownPropKeys are the broker settings and the table's keys.
func knownPropKeys() []string {
	keys := broker.BrokerSettingNames()
	for _, r := range serverPropRules {
		if !strings.HasSuffix(r.key, ".") {
			keys = append(keys, r.key)
		}
	}
	return keys
}

// brokerOptions are the broker command's flag values that the properties
// may supply.
type brokerOptions struct {
	nodeID           int
	listen           string
	advertised       string
	dataDir          string
	controllerQuorum string
	controllerListen string
}

// value returns key's value and entry, if given.
func (p *serverProps) value(key string) (string, propEntry, bool) {
	e, ok := p.origin[key]
	return e.value, e, ok
}

// apply sets o's fields from the mapped keys, except for flags given on
// the command line (given reports those, by name without dashes), which
// win. It returns notes for stderr: the ignored keys, the overridden ones
// and how the quorum was mapped.
func (p *serverProps) apply(o *brokerOptions, given func(flag string) bool) ([]string, error) {
	notes := slices.Clone(p.ignored)
	overridden := func(e propEntry, flag string) {
		notes = append(notes, fmt.Sprintf("%s=%s (%s) is overridden by %s", e.key, e.value, e.where, flag))
	}
	if err := p.applyNodeID(o, given, overridden); err != nil {
		return nil, err
	}
	if err := p.applyDataDir(o, given, overridden); err != nil {
		return nil, err
	}
	controller, err := p.takeControllerListeners()
	if err != nil {
		return nil, err
	}
	if e, ok := p.origin["listeners"]; ok && e.fromFile && (given("listen") || given("advertised")) {
		overridden(e, "--listen/--advertised")
		delete(p.settings, "listeners")
		delete(p.settings, "advertised.listeners")
	}
	quorumNotes, err := p.applyQuorum(o, given, controller)
	if err != nil {
		return nil, err
	}
	if err := p.checkInterBroker(o.controllerQuorum != ""); err != nil {
		return nil, err
	}
	notes = append(notes, quorumNotes...)
	if rf, e, ok := p.value("default.replication.factor"); ok {
		if o.controllerQuorum != "" {
			if n, err := strconv.ParseInt(rf, 10, 16); err != nil || n < 1 {
				return nil, usageError("default.replication.factor=%s (%s): want a whole number of at least 1", rf, e.where)
			}
		} else if err := broker.CheckProperty(e.key, rf); err != nil {
			return nil, usageError("%s (%s; a single broker keeps one replica, a cluster member takes more)", err, e.where)
		}
	}
	return notes, nil
}

// applyNodeID maps node.id and broker.id to --node-id.
func (p *serverProps) applyNodeID(o *brokerOptions, given func(string) bool, overridden func(propEntry, string)) error {
	var id *propEntry
	for _, key := range []string{"node.id", "broker.id"} {
		e, ok := p.origin[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(e.value, 10, 32)
		if err != nil || n < 0 {
			return usageError("%s=%s (%s): want a whole number from 0 to 2147483647", key, e.value, e.where)
		}
		if id != nil && id.value != e.value {
			return usageError("node.id=%s (%s) and broker.id=%s (%s) disagree: give one of them", id.value, id.where, e.value, e.where)
		}
		id = &e
	}
	switch {
	case id == nil:
	case given("node-id"):
		if strconv.Itoa(o.nodeID) != id.value {
			overridden(*id, "--node-id")
		}
	default:
		o.nodeID, _ = strconv.Atoi(id.value)
	}
	return nil
}

// applyDataDir maps log.dirs (or log.dir) to --data-dir: one directory.
func (p *serverProps) applyDataDir(o *brokerOptions, given func(string) bool, overridden func(propEntry, string)) error {
	e, ok := p.origin["log.dirs"]
	if !ok {
		if e, ok = p.origin["log.dir"]; !ok {
			return nil
		}
	}
	var dirs []string
	for _, dir := range strings.Split(e.value, ",") {
		if dir = strings.TrimSpace(dir); dir != "" {
			dirs = append(dirs, dir)
		}
	}
	switch {
	case len(dirs) == 0:
		return usageError("%s (%s) is empty: name the data directory", e.key, e.where)
	case len(dirs) > 1:
		return usageError("%s=%s (%s) names %d directories; exactly keeps one data directory: name one", e.key, e.value, e.where, len(dirs))
	case given("data-dir"):
		if o.dataDir != dirs[0] {
			overridden(e, "--data-dir")
		}
	default:
		o.dataDir = dirs[0]
	}
	return nil
}

// endpoint is one NAME://host:port of listeners or advertised.listeners
// (already checked by the broker's settings table).
type endpoint struct{ name, addr string }

func parseEndpointList(v string) []endpoint {
	var out []endpoint
	for _, entry := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(entry), "://")
		if ok {
			out = append(out, endpoint{name: strings.ToUpper(strings.TrimSpace(name)), addr: addr})
		}
	}
	return out
}

func joinEndpoints(list []endpoint) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = e.name + "://" + e.addr
	}
	return strings.Join(parts, ",")
}

// controllerListener is this member's controller listener, taken out of
// the client listeners: where it listens, and where it is advertised.
type controllerListener struct {
	name, listen, advertised string
}

// takeControllerListeners removes the listeners named by
// controller.listener.names from listeners, advertised.listeners and
// listener.security.protocol.map, and returns the first one's addresses.
func (p *serverProps) takeControllerListeners() (controllerListener, error) {
	namesText, namesEntry, ok := p.value("controller.listener.names")
	if !ok {
		return controllerListener{}, nil
	}
	var names []string
	for _, n := range strings.Split(namesText, ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return controllerListener{}, usageError("controller.listener.names (%s) is empty", namesEntry.where)
	}
	out := controllerListener{name: names[0]}
	split := func(key string, found func(endpoint)) {
		v, ok := p.settings[key]
		if !ok {
			return
		}
		var kept []endpoint
		for _, e := range parseEndpointList(v) {
			if slices.Contains(names, e.name) {
				found(e)
			} else {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(p.settings, key)
		} else {
			p.settings[key] = joinEndpoints(kept)
		}
	}
	split("listeners", func(e endpoint) {
		if e.name == out.name {
			out.listen = e.addr
		}
	})
	split("advertised.listeners", func(e endpoint) {
		if e.name == out.name {
			out.advertised = e.addr
		}
	})
	if v, ok := p.settings["listener.security.protocol.map"]; ok {
		var kept []string
		for _, entry := range strings.Split(v, ",") {
			name, protocol, _ := strings.Cut(strings.TrimSpace(entry), ":")
			name = strings.ToUpper(strings.TrimSpace(name))
			if !slices.Contains(names, name) {
				kept = append(kept, strings.TrimSpace(entry))
				continue
			}
			if !strings.EqualFold(strings.TrimSpace(protocol), "PLAINTEXT") {
				return controllerListener{}, usageError("listener.security.protocol.map (%s) maps the controller listener %s to %s; exactly's Raft transport is plaintext TCP only: map it to PLAINTEXT",
					p.origin["listener.security.protocol.map"].where, name, strings.TrimSpace(protocol))
			}
		}
		p.settings["listener.security.protocol.map"] = strings.Join(kept, ",")
	}
	return out, nil
}

// checkInterBroker accepts security.inter.broker.protocol when it is
// PLAINTEXT, and inter.broker.listener.name when it names a client
// listener that, on a cluster member, is PLAINTEXT: the members' clients
// to each other speak neither TLS nor SASL. The broker checks the same at
// start; here the refusal names the file's line.
func (p *serverProps) checkInterBroker(member bool) error {
	if v, e, ok := p.value("security.inter.broker.protocol"); ok && !strings.EqualFold(v, "PLAINTEXT") {
		return usageError("security.inter.broker.protocol=%s (%s): brokers reach each other in plaintext here; set PLAINTEXT or drop the key", v, e.where)
	}
	name, e, ok := p.value("inter.broker.listener.name")
	if !ok {
		return nil
	}
	name = strings.ToUpper(strings.TrimSpace(name))
	listed := []endpoint{{name: "PLAINTEXT"}} // the implicit listener on --listen
	if v, ok := p.settings["listeners"]; ok {
		listed = parseEndpointList(v)
	}
	found := slices.ContainsFunc(listed, func(l endpoint) bool { return l.name == name })
	protocol := name // Kafka's default map: a protocol's name maps to itself
	if v, ok := p.settings["listener.security.protocol.map"]; ok {
		protocol = ""
		for _, entry := range strings.Split(v, ",") {
			if n, proto, _ := strings.Cut(strings.TrimSpace(entry), ":"); strings.EqualFold(strings.TrimSpace(n), name) {
				protocol = strings.ToUpper(strings.TrimSpace(proto))
			}
		}
	}
	switch {
	case !found:
		return usageError("inter.broker.listener.name=%s (%s): no client listener is named %s", e.value, e.where, name)
	case member && protocol != "PLAINTEXT":
		return usageError("inter.broker.listener.name=%s (%s): the members of a cluster reach each other in plaintext; name a PLAINTEXT listener (on an address only the brokers reach)", e.value, e.where)
	}
	return nil
}

// applyQuorum decides cluster membership from process.roles,
// controller.quorum.voters (or .bootstrap.servers) and the controller
// listener, setting --controller-quorum and --controller-listen unless
// given.
func (p *serverProps) applyQuorum(o *brokerOptions, given func(string) bool, controller controllerListener) ([]string, error) {
	var notes []string
	rolesText, rolesEntry, hasRoles := p.value("process.roles")
	roles := map[string]bool{}
	if hasRoles {
		for _, r := range strings.Split(rolesText, ",") {
			r = strings.ToLower(strings.TrimSpace(r))
			if r != "broker" && r != "controller" {
				return nil, usageError("process.roles=%s (%s): %q is not a role (want broker,controller or broker)", rolesText, rolesEntry.where, r)
			}
			roles[r] = true
		}
		if !roles["broker"] {
			return nil, usageError("process.roles=%s (%s): exactly has no controller-only nodes; every member is a broker: use process.roles=broker,controller (a voter) or broker (not a voter)", rolesText, rolesEntry.where)
		}
	}
	voters, votersEntry, hasVoters := p.value("controller.quorum.voters")
	bootstrap, bootstrapEntry, hasBootstrap := p.value("controller.quorum.bootstrap.servers")
	switch {
	case given("controller-quorum"):
		if hasVoters && voters != o.controllerQuorum {
			notes = append(notes, fmt.Sprintf("controller.quorum.voters=%s (%s) is overridden by --controller-quorum", voters, votersEntry.where))
		}
		voters = o.controllerQuorum
	case hasVoters:
		if hasBootstrap {
			notes = append(notes, fmt.Sprintf("ignoring controller.quorum.bootstrap.servers (%s): controller.quorum.voters names the quorum", bootstrapEntry.where))
		}
	case hasBootstrap:
		standalone, err := standaloneQuorum(bootstrap, bootstrapEntry, controller, o.nodeID)
		if err != nil {
			return nil, err
		}
		voters = standalone
		notes = append(notes, fmt.Sprintf("controller.quorum.bootstrap.servers=%s (%s) names only this node's controller listener: a one-member quorum, as Kafka's 'kafka-storage format --standalone' (controller.quorum.voters=%s)",
			bootstrap, bootstrapEntry.where, standalone))
	case hasRoles:
		return nil, usageError("process.roles=%s (%s) needs controller.quorum.voters=id@host:port,... naming the voters (the same list on every member)", rolesText, rolesEntry.where)
	default:
		return notes, nil // a single broker
	}
	entries, err := quorumEntries(voters)
	if err != nil {
		return nil, usageError("%v", err)
	}
	o.controllerQuorum = voters
	_, listed := entries[int32(o.nodeID)]
	if hasRoles && roles["controller"] && !listed {
		return nil, usageError("process.roles=%s (%s): node.id %d is not in controller.quorum.voters; list it there, or use process.roles=broker for a member that does not vote", rolesText, rolesEntry.where, o.nodeID)
	}
	if hasRoles && !roles["controller"] && listed {
		return nil, usageError("process.roles=broker (%s): node.id %d is listed in controller.quorum.voters; a voter needs process.roles=broker,controller", rolesEntry.where, o.nodeID)
	}
	if len(entries) > 3 {
		notes = append(notes, fmt.Sprintf("controller.quorum.voters lists %d nodes; exactly's quorum has 3 voters, the three lowest ids, and the others receive the log without voting", len(entries)))
	}
	if given("controller-listen") || controller.name == "" {
		if !listed && !given("controller-listen") && !given("controller-quorum") {
			return nil, usageError("node.id %d is not a voter, and exactly runs a Raft non-voter on every member: add %s://host:port to listeners (or give --controller-listen) for its Raft transport (its quorum RPC takes port+100)", o.nodeID, firstNonEmpty(controller.name, "CONTROLLER"))
		}
		return notes, nil
	}
	if controller.listen == "" {
		if !listed {
			return nil, usageError("controller.listener.names names %s, which is not in listeners: add %s://host:port there for this member's Raft transport (its quorum RPC takes port+100)", controller.name, controller.name)
		}
		return notes, nil // a voter listens at its controller.quorum.voters entry
	}
	if listed {
		o.controllerListen = controller.listen // bind there; the others reach it at its voters entry
		return notes, nil
	}
	// A non-voter's address is both bound and told to the leader: it must
	// be one the others can reach.
	addr := firstNonEmpty(controller.advertised, controller.listen)
	if host, _, err := net.SplitHostPort(addr); err != nil || host == "" || net.ParseIP(host).IsUnspecified() {
		return nil, usageError("listener %s://%s: a member that does not vote needs a host the voters can reach (set it in listeners or advertised.listeners)", controller.name, addr)
	}
	o.controllerListen = addr
	return notes, nil
}

// standaloneQuorum maps controller.quorum.bootstrap.servers without
// voters: only Kafka's standalone shape — one address, this node's own
// controller listener — has a sound meaning here (a one-member quorum,
// voter node.id at that address); anything else needs the voters' ids.
func standaloneQuorum(bootstrap string, e propEntry, controller controllerListener, nodeID int) (string, error) {
	servers := strings.Split(bootstrap, ",")
	own := firstNonEmpty(controller.advertised, controller.listen)
	addr := strings.TrimSpace(servers[0])
	if len(servers) == 1 && own != "" && sameEndpoint(addr, own, controller.listen) {
		return fmt.Sprintf("%d@%s", nodeID, addr), nil
	}
	return "", usageError("controller.quorum.bootstrap.servers=%s (%s): exactly's quorum is static and needs the voters' ids: give controller.quorum.voters=1@host:port,2@host:port,3@host:port, the same on every member (a single address that is this node's own controller listener runs a one-member quorum)", bootstrap, e.where)
}

// sameEndpoint reports whether addr is own, or is a loopback address on
// the port of listen, a listener on every interface (Kafka's
// CONTROLLER://:9093 with bootstrap localhost:9093).
func sameEndpoint(addr, own, listen string) bool {
	if addr == own {
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	lhost, lport, err := net.SplitHostPort(listen)
	loopback := host == "localhost" || net.ParseIP(host).IsLoopback()
	return err == nil && lport == port && loopback && (lhost == "" || net.ParseIP(lhost).IsUnspecified())
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
