package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// groupConfigChange is one IncrementalAlterConfigs operation.
type groupConfigChange struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func setConfig(name, value string) groupConfigChange {
	return groupConfigChange{name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)}
}

// alterGroupConfigs sends one IncrementalAlterConfigs of group's configs
// and returns its resource's error code and message.
func alterGroupConfigs(t *testing.T, client *kgo.Client, group string, validateOnly bool, changes ...groupConfigChange) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, c := range changes {
		config := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		config.Name, config.Op, config.Value = c.name, c.op, c.value
		resource.Configs = append(resource.Configs, config)
	}
	req.Resources = append(req.Resources, resource)
	resp, err := req.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil {
		t.Fatalf("incremental alter configs of group %s: %v", group, err)
	}
	r := resp.Resources[0]
	message := ""
	if r.ErrorMessage != nil {
		message = *r.ErrorMessage
	}
	return r.ErrorCode, message
}

// describeGroupConfigs describes group's configs (names nil: all) and
// returns them by name; it fails the test on any error.
func describeGroupConfigs(t *testing.T, client *kgo.Client, group string, names ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	out, err := describeGroupConfigsErr(t, client, group, names...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func describeGroupConfigsErr(t *testing.T, client *kgo.Client, group string, names ...string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType, resource.ResourceName, resource.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, resource)
	resp, err := req.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return nil, err
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out, nil
}

// waitGroupConfigs polls DescribeConfigs, as franz-go's share-group tests
// do, until every named config has its wanted value.
func waitGroupConfigs(t *testing.T, client *kgo.Client, group string, want map[string]string) {
	t.Helper()
	var names []string
	for name := range want {
		names = append(names, name)
	}
	testutil.Until(t, 20*time.Second, "group "+group+" described with its configs", func() bool {
		described, err := describeGroupConfigsErr(t, client, group, names...)
		if err != nil {
			t.Fatalf("describe configs of group %s: %v", group, err)
		}
		for name, value := range want {
			if c, ok := described[name]; !ok || c.Value == nil || *c.Value != value {
				return false
			}
		}
		return true
	})
}

// checkGroupConfig fails unless described has name with value from source.
func checkGroupConfig(t *testing.T, described map[string]kmsg.DescribeConfigsResponseResourceConfig, name, value string, source kmsg.ConfigSource, configType kmsg.ConfigType) {
	t.Helper()
	c, ok := described[name]
	if !ok || c.Value == nil || *c.Value != value || c.Source != source || c.ConfigType != configType || c.ReadOnly || c.IsSensitive {
		t.Fatalf("%s: %+v, want %s from %v of type %v", name, c, value, source, configType)
	}
}

// TestGroupConfigs: configs of a group that does not exist yet are set,
// described (polled as franz-go's share tests do), seen by the broker's
// typed accessor, validated as Kafka does, honour ValidateOnly, go back to
// their defaults when deleted, are replaced whole by AlterConfigs and
// survive a restart.
func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Lower bound relaxed so that a session timeout below the heartbeat
	// interval passes the bounds and meets the cross-check.
	properties := map[string]string{"group.share.min.session.timeout.ms": "1000"}
	b := startTestBroker(t, dir, properties)
	client := newTestClient(t, b)

	if code, msg := alterGroupConfigs(t, client, "shared", false,
		setConfig("share.auto.offset.reset", "earliest"), setConfig("share.record.lock.duration.ms", "15000")); code != 0 {
		t.Fatalf("set: error %d %s", code, msg)
	}
	waitGroupConfigs(t, client, "shared", map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"})

	all := describeGroupConfigs(t, client, "shared")
	if len(all) != len(groupConfigSpecs) {
		t.Fatalf("described %d configs, want every one of the %d: %v", len(all), len(groupConfigSpecs), all)
	}
	checkGroupConfig(t, all, "share.auto.offset.reset", "earliest", kmsg.ConfigSourceGroupConfig, kmsg.ConfigTypeString)
	checkGroupConfig(t, all, "share.record.lock.duration.ms", "15000", kmsg.ConfigSourceGroupConfig, kmsg.ConfigTypeInt)
	checkGroupConfig(t, all, "share.delivery.count.limit", "5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt)
	checkGroupConfig(t, all, "share.isolation.level", "read_uncommitted", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeString)
	checkGroupConfig(t, all, "consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt)
	checkGroupConfig(t, all, "share.heartbeat.interval.ms", "5000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt)
	synonyms := all["share.record.lock.duration.ms"].ConfigSynonyms
	if len(synonyms) != 2 || synonyms[0].Source != kmsg.ConfigSourceGroupConfig || synonyms[1].Name != "group.share.record.lock.duration.ms" ||
		*synonyms[1].Value != "30000" || synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("share.record.lock.duration.ms synonyms: %+v", synonyms)
	}
	if some := describeGroupConfigs(t, client, "shared", "share.isolation.level", "no.such.config"); len(some) != 1 {
		t.Fatalf("asked for one known and one unknown name, got %v", some)
	}
	gs := b.groupSettings("shared")
	if gs.ShareAutoOffsetReset != "earliest" || gs.ShareRecordLockDuration != 15*time.Second || gs.ShareDeliveryCountLimit != 5 ||
		gs.ShareSessionTimeout != 45*time.Second || gs.ShareReadCommitted || gs.ConsumerHeartbeatInterval != 5*time.Second {
		t.Fatalf("groupSettings: %+v", gs)
	}
	if other := b.groupSettings("other"); other.ShareAutoOffsetReset != "latest" || other.ShareRecordLockDuration != 30*time.Second {
		t.Fatalf("groupSettings of a group without configs: %+v", other)
	}

	invalid := []struct {
		change  groupConfigChange
		code    int16
		message string
	}{
		{setConfig("no.such.config", "1"), kerr.InvalidConfig.Code, "share.record.lock.duration.ms"}, // the message names the allowed ones
		{setConfig("share.record.lock.duration.ms", "soon"), kerr.InvalidConfig.Code, "not a 32-bit integer"},
		{setConfig("share.record.lock.duration.ms", "1000"), kerr.InvalidConfig.Code, "group.share.min.record.lock.duration.ms"},
		{setConfig("share.delivery.count.limit", "11"), kerr.InvalidConfig.Code, "group.share.max.delivery.count.limit"},
		{setConfig("share.delivery.count.limit", "1"), kerr.InvalidConfig.Code, "below"},
		{setConfig("consumer.session.timeout.ms", "44999"), kerr.InvalidConfig.Code, "group.consumer.min.session.timeout.ms"},
		{setConfig("share.session.timeout.ms", "4000"), kerr.InvalidConfig.Code, "must be greater than share.heartbeat.interval.ms"},
		{setConfig("share.auto.offset.reset", "none"), kerr.InvalidConfig.Code, "by_duration"},
		{setConfig("share.auto.offset.reset", "by_duration:-PT1H"), kerr.InvalidConfig.Code, "negative"},
		{setConfig("share.auto.offset.reset", "by_duration:1h"), kerr.InvalidConfig.Code, "ISO-8601"},
		{setConfig("share.isolation.level", "serializable"), kerr.InvalidConfig.Code, "read_committed"},
		{groupConfigChange{"share.isolation.level", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("read_committed")}, kerr.InvalidConfig.Code, "not a list"},
		{groupConfigChange{"share.isolation.level", kmsg.IncrementalAlterConfigOpSet, nil}, kerr.InvalidConfig.Code, "needs a value"},
	}
	for _, c := range invalid {
		code, msg := alterGroupConfigs(t, client, "shared", false, c.change)
		if code != c.code || !strings.Contains(msg, c.message) {
			t.Errorf("%s %v %v: error %d %q, want %d mentioning %q", c.change.name, c.change.op, c.change.value, code, msg, c.code, c.message)
		}
	}
	if code, _ := alterGroupConfigs(t, client, "", false, setConfig("share.isolation.level", "read_committed")); code != kerr.InvalidRequest.Code {
		t.Fatalf("the empty group id: error %d, want INVALID_REQUEST", code)
	}

	// ValidateOnly checks and changes nothing.
	if code, msg := alterGroupConfigs(t, client, "shared", true, setConfig("share.delivery.count.limit", "3")); code != 0 {
		t.Fatalf("validate only: error %d %s", code, msg)
	}
	if code, _ := alterGroupConfigs(t, client, "shared", true, setConfig("share.delivery.count.limit", "30")); code != kerr.InvalidConfig.Code {
		t.Fatalf("validate only of an invalid value: error %d", code)
	}
	checkGroupConfig(t, describeGroupConfigs(t, client, "shared"), "share.delivery.count.limit", "5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt)

	// by_duration, and DELETE back to the default.
	if code, msg := alterGroupConfigs(t, client, "shared", false, setConfig("share.auto.offset.reset", "by_duration:P1DT1H30M"),
		groupConfigChange{"share.record.lock.duration.ms", kmsg.IncrementalAlterConfigOpDelete, nil}); code != 0 {
		t.Fatalf("by_duration and delete: error %d %s", code, msg)
	}
	described := describeGroupConfigs(t, client, "shared")
	checkGroupConfig(t, described, "share.record.lock.duration.ms", "30000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt)
	checkGroupConfig(t, described, "share.auto.offset.reset", "by_duration:P1DT1H30M", kmsg.ConfigSourceGroupConfig, kmsg.ConfigTypeString)
	if gs := b.groupSettings("shared"); gs.ShareAutoOffsetReset != "by_duration" || gs.ShareAutoOffsetResetDuration != 25*time.Hour+30*time.Minute ||
		gs.ShareRecordLockDuration != 30*time.Second {
		t.Fatalf("groupSettings after by_duration and delete: %+v", gs)
	}

	// AlterConfigs replaces the whole set.
	alter := kmsg.NewPtrAlterConfigsRequest()
	resource := kmsg.NewAlterConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "shared"
	for name, value := range map[string]string{"share.isolation.level": "read_committed", "consumer.heartbeat.interval.ms": "6000"} {
		config := kmsg.NewAlterConfigsRequestResourceConfig()
		config.Name, config.Value = name, kmsg.StringPtr(value)
		resource.Configs = append(resource.Configs, config)
	}
	alter.Resources = append(alter.Resources, resource)
	altered, err := alter.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil || altered.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %v %+v", err, altered)
	}
	described = describeGroupConfigs(t, client, "shared")
	checkGroupConfig(t, described, "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeString)
	checkGroupConfig(t, described, "share.isolation.level", "read_committed", kmsg.ConfigSourceGroupConfig, kmsg.ConfigTypeString)

	// They are durable.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, properties)
	client = newTestClient(t, b)
	waitGroupConfigs(t, client, "shared", map[string]string{"share.isolation.level": "read_committed", "consumer.heartbeat.interval.ms": "6000"})
	if gs := b.groupSettings("shared"); !gs.ShareReadCommitted || gs.ConsumerHeartbeatInterval != 6*time.Second {
		t.Fatalf("groupSettings after a restart: %+v", gs)
	}
}

// TestGroupConfigsNeedGroupACLs: with an authorizer, describing a group's
// configs needs DescribeConfigs on the group and changing them
// AlterConfigs on the group (GROUP_AUTHORIZATION_FAILED otherwise), as in
// Kafka.
func TestGroupConfigsNeedGroupACLs(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil,
		grant(groupRT, literal, "allowed", kmsg.ACLOperationAlterConfigs),
		grant(groupRT, literal, "allowed", kmsg.ACLOperationDescribeConfigs))
	client := newTestClient(t, b)
	if code, msg := alterGroupConfigs(t, client, "allowed", false, setConfig("share.delivery.count.limit", "4")); code != 0 {
		t.Fatalf("alter with AlterConfigs on the group: error %d %s", code, msg)
	}
	checkGroupConfig(t, describeGroupConfigs(t, client, "allowed"), "share.delivery.count.limit", "4", kmsg.ConfigSourceGroupConfig, kmsg.ConfigTypeInt)
	if code, _ := alterGroupConfigs(t, client, "other", false, setConfig("share.delivery.count.limit", "4")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without an ACL: error %d, want GROUP_AUTHORIZATION_FAILED", code)
	}
	if _, err := describeGroupConfigsErr(t, client, "other"); err != kerr.GroupAuthorizationFailed {
		t.Fatalf("describe without an ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
}

func TestParseISODuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"PT1H": time.Hour, "pt15m": 15 * time.Minute, "P2D": 48 * time.Hour, "PT0.5S": 500 * time.Millisecond,
		"P1DT2H3M4.000000005S": 26*time.Hour + 3*time.Minute + 4*time.Second + 5, "PT0S": 0, "-PT-1H": time.Hour,
		"PT2H-30M": 90 * time.Minute,
	} {
		got, err := parseISODuration(in)
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "1H", "PT1", "P1H", "PT1.5M", "-PT1H", "PT-0.5S", "P1DT", "P200000D", "PT1H "} {
		if got, err := parseISODuration(in); err == nil {
			t.Errorf("%q: %v, want an error", in, got)
		}
	}
}

// consumerJoin joins group with the consumer protocol (KIP-848) as a new
// member and returns the answer.
func consumerJoin(t *testing.T, client *kgo.Client, group, member string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{"events"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{} // owns nothing yet
	resp, err := req.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join %s: %v %+v", group, err, resp)
	}
	return resp
}

// consumerMembers is the number of members ConsumerGroupDescribe lists.
func consumerMembers(t *testing.T, client *kgo.Client, group string) int {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %v %+v", group, err, resp)
	}
	return len(resp.Groups[0].Members)
}

// TestConsumerGroupTakesItsGroupConfigs: a consumer-protocol group's
// members are told its consumer.heartbeat.interval.ms and expire after
// its consumer.session.timeout.ms; another group keeps the broker's.
func TestConsumerGroupTakesItsGroupConfigs(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"group.consumer.min.session.timeout.ms": "500", "group.consumer.min.heartbeat.interval.ms": "100"})
	client := newTestClient(t, b)
	createTopic(t, client, "events", 1, nil)
	if code, msg := alterGroupConfigs(t, client, "brief", false,
		setConfig("consumer.session.timeout.ms", "800"), setConfig("consumer.heartbeat.interval.ms", "200")); code != 0 {
		t.Fatalf("set: error %d %s", code, msg)
	}
	readyCoordinator(t, b, coordinatorGroup, "brief")
	readyCoordinator(t, b, coordinatorGroup, "usual")
	if resp := consumerJoin(t, client, "brief", "brief-member-0000000"); resp.HeartbeatIntervalMillis != 200 {
		t.Fatalf("brief's heartbeat interval: %d ms, want 200", resp.HeartbeatIntervalMillis)
	}
	if resp := consumerJoin(t, client, "usual", "usual-member-0000000"); resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("usual's heartbeat interval: %d ms, want the broker's 5000", resp.HeartbeatIntervalMillis)
	}
	testutil.Until(t, 20*time.Second, "brief's silent member expires after its 800 ms session", func() bool {
		return consumerMembers(t, client, "brief") == 0
	})
	if n := consumerMembers(t, client, "usual"); n != 1 {
		t.Fatalf("usual has %d members, want its one (45 s session)", n)
	}
}
