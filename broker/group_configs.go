package broker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// Group configs: Kafka's GROUP config resource (ConfigResource type 32,
// kmsg.ConfigResourceTypeGroupConfig; the resource name is the group id).
// An admin sets a group's configs with IncrementalAlterConfigs or
// AlterConfigs and reads them with DescribeConfigs, before the group
// exists if it likes. They are cluster metadata, kept by the quorum
// (quorum.Node.SetGroupConfigs) so every broker sees the same and they
// survive restarts; a broker reads them through its GroupConfigStore, and
// the rest of the broker through [Broker.groupSettings].
//
// The names are those of Kafka 4.1's GroupConfig except the streams.*
// ones (streams groups, KIP-1071, are not served) and, of later versions,
// share.partition.max.record.locks and share.renew.acknowledge.enable.
// Each value is checked as Kafka does: its type, its broker-level bounds
// (group.consumer.min.session.timeout.ms, ...), and, over the broker's
// defaults, a session timeout longer than the heartbeat interval.

// groupSettings are one group's effective settings: its dynamic group
// configs over the broker's defaults.
type groupSettings struct {
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	ShareSessionTimeout, ShareHeartbeatInterval       time.Duration
	ShareRecordLockDuration                           time.Duration
	ShareAutoOffsetReset                              string        // "earliest", "latest", or "by_duration"
	ShareAutoOffsetResetDuration                      time.Duration // for by_duration
	ShareReadCommitted                                bool
	ShareDeliveryCountLimit                           int
}

// groupSettings returns the effective settings of group groupID as the
// cluster's metadata last applied here holds them. It takes no lock the
// produce or fetch path takes (the quorum's image is an atomic pointer).
// A value outside the broker's current bounds (they may have changed since
// it was set) is clamped to them, as Kafka does.
func (b *Broker) groupSettings(groupID string) groupSettings {
	s := &b.config.settings
	gs := groupSettings{
		ConsumerSessionTimeout:    s.ConsumerSessionTimeout,
		ConsumerHeartbeatInterval: s.ConsumerHeartbeatInterval,
		ShareSessionTimeout:       s.GroupConfigs.ShareSessionTimeout,
		ShareHeartbeatInterval:    s.GroupConfigs.ShareHeartbeatInterval,
		ShareRecordLockDuration:   s.GroupConfigs.ShareRecordLockDuration,
		ShareAutoOffsetReset:      "latest",
		ShareDeliveryCountLimit:   int(s.GroupConfigs.ShareDeliveryCountLimit),
	}
	for name, value := range b.groupConfigStore().GroupConfigs(groupID) {
		spec, ok := findGroupConfig(name)
		if !ok {
			continue // validated when set; a name of a later version
		}
		if spec.kind == kindInt {
			n, err := strconv.ParseInt(value, 10, 32)
			if err != nil {
				continue
			}
			r := spec.bounds(s)
			spec.setInt(&gs, min(max(n, r.Min), r.Max))
			continue
		}
		spec.setString(&gs, value)
	}
	return gs
}

// groupConfigSpec is one group config.
type groupConfigSpec struct {
	name string
	kind settingKind // kindInt or kindString
	doc  string
	// brokerKey is the broker setting whose value is the default; ""
	// when the default is fixedDefault.
	brokerKey    string
	fixedDefault string
	// minKey and maxKey name the broker settings bounding an int config,
	// bounds returns their values.
	minKey, maxKey string
	bounds         func(*settings) bounds
	setInt         func(*groupSettings, int64)
	// check validates a string config's value; setString applies it.
	check     func(string) error
	setString func(*groupSettings, string)
}

var groupConfigSpecs = []groupConfigSpec{
	{name: "consumer.session.timeout.ms", kind: kindInt, brokerKey: "group.consumer.session.timeout.ms",
		minKey: "group.consumer.min.session.timeout.ms", maxKey: "group.consumer.max.session.timeout.ms",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ConsumerSessionTimeoutBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ConsumerSessionTimeout = millis(n) },
		doc:    "Consumer-protocol groups (KIP-848): how long a member may go without a heartbeat before it is removed."},
	{name: "consumer.heartbeat.interval.ms", kind: kindInt, brokerKey: "group.consumer.heartbeat.interval.ms",
		minKey: "group.consumer.min.heartbeat.interval.ms", maxKey: "group.consumer.max.heartbeat.interval.ms",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ConsumerHeartbeatIntervalBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ConsumerHeartbeatInterval = millis(n) },
		doc:    "Consumer-protocol groups (KIP-848): the heartbeat interval members are told to use."},
	{name: "share.session.timeout.ms", kind: kindInt, brokerKey: "group.share.session.timeout.ms",
		minKey: "group.share.min.session.timeout.ms", maxKey: "group.share.max.session.timeout.ms",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ShareSessionTimeoutBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ShareSessionTimeout = millis(n) },
		doc:    "Share groups (KIP-932): how long a member may go without a heartbeat before it is removed."},
	{name: "share.heartbeat.interval.ms", kind: kindInt, brokerKey: "group.share.heartbeat.interval.ms",
		minKey: "group.share.min.heartbeat.interval.ms", maxKey: "group.share.max.heartbeat.interval.ms",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ShareHeartbeatIntervalBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ShareHeartbeatInterval = millis(n) },
		doc:    "Share groups (KIP-932): the heartbeat interval members are told to use."},
	{name: "share.record.lock.duration.ms", kind: kindInt, brokerKey: "group.share.record.lock.duration.ms",
		minKey: "group.share.min.record.lock.duration.ms", maxKey: "group.share.max.record.lock.duration.ms",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ShareRecordLockDurationBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ShareRecordLockDuration = millis(n) },
		doc:    "Share groups (KIP-932): how long a consumer holds the records it acquired before they may be delivered again."},
	{name: "share.delivery.count.limit", kind: kindInt, brokerKey: "group.share.delivery.count.limit",
		minKey: "group.share.min.delivery.count.limit", maxKey: "group.share.max.delivery.count.limit",
		bounds: func(s *settings) bounds { return s.GroupConfigs.ShareDeliveryCountLimitBounds },
		setInt: func(gs *groupSettings, n int64) { gs.ShareDeliveryCountLimit = int(n) },
		doc:    "Share groups (KIP-932): how many times a record is delivered before it is archived."},
	{name: "share.auto.offset.reset", kind: kindString, fixedDefault: "latest",
		check: func(v string) error { _, _, err := parseShareAutoOffsetReset(v); return err },
		setString: func(gs *groupSettings, v string) {
			if strategy, d, err := parseShareAutoOffsetReset(v); err == nil {
				gs.ShareAutoOffsetReset, gs.ShareAutoOffsetResetDuration = strategy, d
			}
		},
		doc: "Share groups (KIP-932): where a share partition starts when it has no state: earliest, latest, or by_duration:<ISO-8601 duration> (the first record no older than that, e.g. by_duration:PT1H)."},
	{name: "share.isolation.level", kind: kindString, fixedDefault: "read_uncommitted",
		check: func(v string) error {
			if v != "read_committed" && v != "read_uncommitted" {
				return fmt.Errorf("%q is not read_committed or read_uncommitted", v)
			}
			return nil
		},
		setString: func(gs *groupSettings, v string) { gs.ShareReadCommitted = v == "read_committed" },
		doc:       "Share groups (KIP-932): read_committed delivers only committed transactional records; read_uncommitted delivers every record."},
}

func findGroupConfig(name string) (groupConfigSpec, bool) {
	for _, spec := range groupConfigSpecs {
		if spec.name == name {
			return spec, true
		}
	}
	return groupConfigSpec{}, false
}

func groupConfigNames() string {
	names := make([]string, len(groupConfigSpecs))
	for i, spec := range groupConfigSpecs {
		names[i] = spec.name
	}
	return strings.Join(names, ", ")
}

// defaultValue is the config's value when the group does not set it.
func (spec groupConfigSpec) defaultValue(c brokerConfig) string {
	if spec.brokerKey == "" {
		return spec.fixedDefault
	}
	v, _ := c.lookup(spec.brokerKey)
	return v
}

// validateGroupConfigs checks a group's whole set of configs: known
// names, values of the right type within the broker's bounds, and each
// session timeout (set, or the broker's default) longer than its
// heartbeat interval. Errors wrap errInvalidConfig.
func validateGroupConfigs(c brokerConfig, configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if err := validateGroupConfig(c, name, configs[name]); err != nil {
			return fmt.Errorf("%w: %w", errInvalidConfig, err)
		}
	}
	for _, pair := range [][2]string{
		{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
		{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	} {
		session, heartbeat := effectiveGroupInt(c, configs, pair[0]), effectiveGroupInt(c, configs, pair[1])
		if session <= heartbeat {
			return fmt.Errorf("%w: %s (%d) must be greater than %s (%d)", errInvalidConfig, pair[0], session, pair[1], heartbeat)
		}
	}
	return nil
}

func validateGroupConfig(c brokerConfig, name, value string) error {
	spec, ok := findGroupConfig(name)
	if !ok {
		return fmt.Errorf("unknown group config %q (group configs are %s)", name, groupConfigNames())
	}
	if spec.kind == kindString {
		if err := spec.check(value); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return fmt.Errorf("%s: %q is not a 32-bit integer", name, value)
	}
	r := spec.bounds(&c.settings)
	if n < r.Min {
		return fmt.Errorf("%s: %d is below %s (%d)", name, n, spec.minKey, r.Min)
	}
	if n > r.Max {
		return fmt.Errorf("%s: %d is above %s (%d)", name, n, spec.maxKey, r.Max)
	}
	return nil
}

// effectiveGroupInt is an int config's value in configs (validated), or
// the broker's default.
func effectiveGroupInt(c brokerConfig, configs map[string]string, name string) int64 {
	spec, _ := findGroupConfig(name)
	value, ok := configs[name]
	if !ok {
		value = spec.defaultValue(c)
	}
	n, _ := strconv.ParseInt(value, 10, 64)
	return n
}

// parseShareAutoOffsetReset reads share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy does (case-insensitively): earliest,
// latest, or by_duration:<a non-negative ISO-8601 duration>.
func parseShareAutoOffsetReset(v string) (strategy string, d time.Duration, err error) {
	lower := strings.ToLower(v)
	switch {
	case lower == "earliest" || lower == "latest":
		return lower, 0, nil
	case strings.HasPrefix(lower, "by_duration:"):
		d, err := parseISODuration(v[len("by_duration:"):])
		if err != nil {
			return "", 0, fmt.Errorf("%q: %w", v, err)
		}
		return "by_duration", d, nil
	}
	return "", 0, fmt.Errorf("%q is not earliest, latest or by_duration:<ISO-8601 duration, e.g. PT1H>", v)
}

// isoDuration is Java's Duration.parse format: PnDTnHnMn.nS, each number
// signed, the letters in either case, fractions only of seconds.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration parses an ISO-8601 duration of days, hours, minutes and
// seconds (PT1H, P1DT30M, PT0.5S) and refuses a negative one, as Kafka's
// by_duration does.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || (m[2] == "" && m[3] == "") || strings.EqualFold(m[3], "T") {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration (PnDTnHnMn.nS)", s)
	}
	var total, fraction int64
	for _, part := range []struct {
		digits string
		unit   time.Duration
	}{{m[2], 24 * time.Hour}, {m[4], time.Hour}, {m[5], time.Minute}, {m[6], time.Second}} {
		if part.digits == "" {
			continue
		}
		n, err := strconv.ParseInt(part.digits, 10, 64)
		if err != nil || n > math.MaxInt64/int64(part.unit) || n < math.MinInt64/int64(part.unit) {
			return 0, fmt.Errorf("%q is too long a duration", s)
		}
		total, err = addDurations(total, n*int64(part.unit))
		if err != nil {
			return 0, fmt.Errorf("%q: %w", s, err)
		}
	}
	if m[7] != "" {
		fraction, _ = strconv.ParseInt((m[7] + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			fraction = -fraction
		}
	}
	total, err := addDurations(total, fraction)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	if m[1] == "-" {
		total = -total
	}
	if total < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return time.Duration(total), nil
}

func addDurations(a, b int64) (int64, error) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, fmt.Errorf("too long a duration")
	}
	return a + b, nil
}

// GroupConfigStore holds the groups' dynamic configs for the cluster:
// the quorum's metadata (quorumGroupConfigs), or, for a broker started
// with a controller of its own (Config.Replication, the replication
// tests' fake) that gives none, memory.
type GroupConfigStore interface {
	// GroupConfigs returns group's configs (nil when it has none); the
	// caller may keep and modify the map.
	GroupConfigs(group string) map[string]string
	// SetGroupConfigs replaces group's configs (none: removes them) and
	// returns once this broker's GroupConfigs returns them.
	SetGroupConfigs(ctx context.Context, group string, configs map[string]string) error
}

// groupConfigStore returns the broker's GroupConfigStore.
func (b *Broker) groupConfigStore() GroupConfigStore { return b.replication.config.GroupConfigs }

// quorumGroupConfigs is the GroupConfigStore of a member: its quorum
// node's image (read without a lock) and the controller.
type quorumGroupConfigs struct{ node *quorum.Node }

func (q quorumGroupConfigs) GroupConfigs(group string) map[string]string {
	return q.node.Image().GroupConfigs(group)
}

func (q quorumGroupConfigs) SetGroupConfigs(ctx context.Context, group string, configs map[string]string) error {
	if err := q.node.SetGroupConfigs(ctx, group, configs); err != nil {
		return quorumKafkaError(err)
	}
	return nil
}

// memoryGroupConfigs is a GroupConfigStore in memory, not durable.
type memoryGroupConfigs struct {
	mu      sync.Mutex // guards configs
	configs map[string]map[string]string
}

func (m *memoryGroupConfigs) GroupConfigs(group string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.configs[group])
}

func (m *memoryGroupConfigs) SetGroupConfigs(_ context.Context, group string, configs map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs == nil {
		m.configs = map[string]map[string]string{}
	}
	if len(configs) == 0 {
		delete(m.configs, group)
	} else {
		m.configs[group] = maps.Clone(configs)
	}
	return nil
}

// ReplaceGroupConfigs sets group's configs to configs (AlterConfigs).
func (s adminService) ReplaceGroupConfigs(group string, configs map[string]string, validateOnly bool) error {
	return s.b.alterGroupConfigs(group, validateOnly,
		func(map[string]string) (map[string]string, error) { return configs, nil })
}

// ChangeGroupConfigs applies IncrementalAlterConfigs operations to
// group's configs: SET and DELETE; no group config is a list, so APPEND
// and SUBTRACT are INVALID_CONFIG.
func (s adminService) ChangeGroupConfigs(group string, changes []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	return s.b.alterGroupConfigs(group, validateOnly, func(current map[string]string) (map[string]string, error) {
		next := maps.Clone(current)
		if next == nil {
			next = map[string]string{}
		}
		for _, change := range changes {
			if _, known := findGroupConfig(change.Name); !known {
				return nil, fmt.Errorf("%w: unknown group config %q (group configs are %s)", errInvalidConfig, change.Name, groupConfigNames())
			}
			switch change.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if change.Value == nil {
					return nil, fmt.Errorf("%w: SET %s needs a value", errInvalidConfig, change.Name)
				}
				next[change.Name] = *change.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(next, change.Name)
			case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
				return nil, fmt.Errorf("%w: %s is not a list; APPEND and SUBTRACT need one", errInvalidConfig, change.Name)
			default:
				return nil, fmt.Errorf("%w: operation %d on %s", errInvalidRequest, change.Op, change.Name)
			}
		}
		return next, nil
	})
}

// DescribeGroupConfigs describes group's configs: every group config
// wanted accepts, GROUP_CONFIG when the group sets it, DEFAULT_CONFIG
// (with the broker's default) otherwise.
func (s adminService) DescribeGroupConfigs(group string, wanted func(string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: a group config resource needs a group id", errInvalidRequest)
	}
	return s.b.describeGroupConfigs(s.b.groupConfigStore().GroupConfigs(group), wanted, synonyms, documentation), nil
}

// alterGroupConfigs computes group's new configs from its current ones
// with change, validates them and (unless validateOnly) stores them.
func (b *Broker) alterGroupConfigs(group string, validateOnly bool,
	change func(current map[string]string) (map[string]string, error)) error {
	if group == "" {
		return fmt.Errorf("%w: a group config resource needs a group id", errInvalidRequest)
	}
	store := b.groupConfigStore()
	next, err := change(store.GroupConfigs(group))
	if err != nil {
		return err
	}
	if err := validateGroupConfigs(b.config, next); err != nil || validateOnly {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, clusterAdminTimeout)
	defer cancel()
	if err := store.SetGroupConfigs(ctx, group, next); err != nil {
		return fmt.Errorf("set configs of group %s: %w", group, err)
	}
	return nil
}

func (b *Broker) describeGroupConfigs(configs map[string]string, wanted func(string) bool, synonyms, documentation bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, spec := range groupConfigSpecs {
		if !wanted(spec.name) {
			continue
		}
		entry := kmsg.NewDescribeConfigsResponseResourceConfig()
		entry.Name = spec.name
		entry.ConfigType = kmsg.ConfigType(spec.kind)
		value, set := configs[spec.name]
		entry.Source = kmsg.ConfigSourceGroupConfig
		if !set {
			value, entry.Source = spec.defaultValue(b.config), kmsg.ConfigSourceDefaultConfig
		}
		entry.Value = &value
		entry.IsDefault = !set
		if documentation {
			entry.Documentation = &spec.doc
		}
		if synonyms {
			if set {
				entry.ConfigSynonyms = append(entry.ConfigSynonyms, synonym(spec.name, &value, kmsg.ConfigSourceGroupConfig))
			}
			if spec.brokerKey != "" {
				entry.ConfigSynonyms = append(entry.ConfigSynonyms, b.brokerSynonyms([]string{spec.brokerKey})...)
			}
		}
		out = append(out, entry)
	}
	return out
}
