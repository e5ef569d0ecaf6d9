package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/wire"
)

// These tests run the authorizer end to end with franz-go clients. Until
// SASL is in, every connection is PLAINTEXT and its principal is
// User:ANONYMOUS, so the ACLs name User:ANONYMOUS or User:*.

const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// grant is an ALLOW binding for User:ANONYMOUS from any host.
func grant(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: anonymousPrincipal,
		Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// refuse is grant with DENY.
func refuse(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name string, op kmsg.ACLOperation) acl.Binding {
	b := grant(rt, pt, name, op)
	b.Permission = kmsg.ACLPermissionTypeDeny
	return b
}

const (
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	topicRT  = kmsg.ACLResourceTypeTopic
	groupRT  = kmsg.ACLResourceTypeGroup
	txnRT    = kmsg.ACLResourceTypeTransactionalId
	cluster  = kmsg.ACLResourceTypeCluster
)

// seedACLs writes bindings into the ACL store of the broker of data
// directory dir, as a broker would have.
func seedACLs(t *testing.T, dir string, bindings ...acl.Binding) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, brokerDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := acl.Open(acl.Options{Path: filepath.Join(dir, brokerDirName, aclsFile)})
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range a.Create(bindings) {
		if err != nil {
			t.Fatalf("seed %v: %v", bindings[i], err)
		}
	}
}

// startACLBroker starts a broker with the authorizer on and bindings in
// its store; extra properties are added.
func startACLBroker(t *testing.T, dir string, extra map[string]string, bindings ...acl.Binding) *Broker {
	t.Helper()
	seedACLs(t, dir, bindings...)
	properties := map[string]string{"authorizer.class.name": standardAuthorizer}
	for k, v := range extra {
		properties[k] = v
	}
	return startTestBroker(t, dir, properties)
}

// produceOne produces one record synchronously and returns its error.
func produceOne(t *testing.T, client *kgo.Client, topic string) error {
	t.Helper()
	ctx := testContext(t, 15*time.Second)
	return client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// logEnd is the log end offset of partition 0 of a topic on b.
func logEnd(t *testing.T, b *Broker, topic string) int64 {
	t.Helper()
	tp := b.topicByName(topic)
	if tp == nil {
		t.Fatalf("topic %s does not exist", topic)
	}
	return b.partitionsOf(tp)[0].Log().LogEndOffset()
}

// TestACLProduceNeedsWrite: without Write on a topic a produce gets
// TOPIC_AUTHORIZATION_FAILED and nothing reaches the log; Write on a
// literal name or a prefix lets it through; the idempotent producer's
// InitProducerId passes because the principal may Write some topic.
func TestACLProduceNeedsWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startACLBroker(t, dir, nil,
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationCreate),
		grant(topicRT, literal, "allowed", kmsg.ACLOperationWrite),
		grant(topicRT, prefixed, "orders-", kmsg.ACLOperationWrite),
	)
	admin := newTestClient(t, b)
	for _, name := range []string{"allowed", "denied", "orders-eu", "ordersx"} {
		createTopic(t, admin, name, 1, nil)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	for _, tc := range []struct {
		topic string
		want  error
	}{
		{"allowed", nil},
		{"orders-eu", nil},
		{"denied", kerr.TopicAuthorizationFailed},
		{"ordersx", kerr.TopicAuthorizationFailed},
	} {
		err := produceOne(t, producer, tc.topic)
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Fatalf("produce to %s: %v, want %v", tc.topic, err, tc.want)
		}
		wantEnd := int64(1)
		if tc.want != nil {
			wantEnd = 0
		}
		if end := logEnd(t, b, tc.topic); end != wantEnd {
			t.Fatalf("%s: log end offset %d after the produce, want %d", tc.topic, end, wantEnd)
		}
	}
}

// TestACLIdempotentProducerNeedsSomeWrite: with no Write anywhere and no
// IdempotentWrite on the Cluster, InitProducerId without a transactional
// id is CLUSTER_AUTHORIZATION_FAILED.
func TestACLIdempotentProducerNeedsSomeWrite(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil, grant(topicRT, literal, "t", kmsg.ACLOperationRead))
	client := newTestClient(t, b)
	resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("InitProducerId without rights: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestACLTransactionalIDNeedsWrite: a transactional producer whose id is
// not covered cannot init it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
// one under a prefixed ACL runs a transaction to its commit.
func TestACLTransactionalIDNeedsWrite(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil,
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationCreate),
		grant(topicRT, literal, "t", kmsg.ACLOperationWrite),
		grant(txnRT, prefixed, "app-", kmsg.ACLOperationWrite),
	)
	createTopic(t, newTestClient(t, b), "t", 1, nil)
	run := func(id string) error {
		producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id), kgo.RecordRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		ctx := testContext(t, 20*time.Second)
		if err := producer.BeginTransaction(); err != nil {
			return err
		}
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(id)}).FirstErr(); err != nil {
			producer.EndTransaction(ctx, kgo.TryAbort)
			return err
		}
		return producer.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := run("other-1"); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional id without Write: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	if end := logEnd(t, b, "t"); end != 0 {
		t.Fatalf("log end offset %d after a refused transaction, want 0", end)
	}
	if err := run("app-1"); err != nil {
		t.Fatalf("transactional id under the prefixed ACL: %v", err)
	}
	if end := logEnd(t, b, "t"); end != 2 { // the record and the commit marker
		t.Fatalf("log end offset %d after a committed transaction, want 2", end)
	}
}

// TestACLDenyBeatsAllow: an ALLOW for User:* on every topic does not
// override a DENY for the principal on one topic.
func TestACLDenyBeatsAllow(t *testing.T) {
	t.Parallel()
	everyone := grant(topicRT, literal, acl.Wildcard, kmsg.ACLOperationAll)
	everyone.Principal = acl.WildcardPrincipal
	b := startACLBroker(t, t.TempDir(), nil,
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationCreate),
		everyone,
		refuse(topicRT, literal, "locked", kmsg.ACLOperationWrite),
	)
	admin := newTestClient(t, b)
	createTopic(t, admin, "locked", 1, nil)
	createTopic(t, admin, "open", 1, nil)
	if err := produceOne(t, admin, "open"); err != nil {
		t.Fatalf("produce to open: %v", err)
	}
	if err := produceOne(t, admin, "locked"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to locked: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if end := logEnd(t, b, "locked"); end != 0 {
		t.Fatalf("locked has %d records", end)
	}
}

// TestACLMetadataHidesTopics: an all-topics Metadata lists only the
// topics the principal may Describe (READ implies it); a named one it may
// not gets TOPIC_AUTHORIZATION_FAILED; auto-creation without Create is
// refused the same way and creates nothing.
func TestACLMetadataHidesTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setup := startTestBroker(t, dir, nil)
	admin := newTestClient(t, setup)
	createTopic(t, admin, "visible", 1, nil)
	createTopic(t, admin, "hidden", 1, nil)
	admin.Close()
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}
	b := startACLBroker(t, dir, nil, grant(topicRT, literal, "visible", kmsg.ACLOperationRead))
	client := newTestClient(t, b)
	ctx := testContext(t, 10*time.Second)

	all := kmsg.NewPtrMetadataRequest()
	resp, err := all.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, topic := range resp.Topics {
		names = append(names, *topic.Topic)
	}
	if !slices.Equal(names, []string{"visible"}) {
		t.Fatalf("all-topics Metadata lists %v, want only [visible]", names)
	}

	named := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"visible", "hidden", "brand-new"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		named.Topics = append(named.Topics, rt)
	}
	named.AllowAutoTopicCreation = true
	resp, err = named.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"visible": 0, "hidden": kerr.TopicAuthorizationFailed.Code, "brand-new": kerr.TopicAuthorizationFailed.Code}
	for _, topic := range resp.Topics {
		if topic.ErrorCode != want[*topic.Topic] {
			t.Errorf("Metadata %s: %v, want %v", *topic.Topic, kerr.ErrorForCode(topic.ErrorCode), kerr.ErrorForCode(want[*topic.Topic]))
		}
		if topic.ErrorCode != 0 && len(topic.Partitions) != 0 {
			t.Errorf("Metadata %s: refused but lists partitions", *topic.Topic)
		}
	}
	if b.topicByName("brand-new") != nil {
		t.Fatal("Metadata auto-created a topic without Create")
	}
}

// TestACLSuperUsers: a super user is allowed everything, even against a
// DENY for it.
func TestACLSuperUsers(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), map[string]string{"super.users": "User:admin; " + anonymousPrincipal},
		refuse(topicRT, literal, acl.Wildcard, kmsg.ACLOperationAll),
		refuse(cluster, literal, acl.ClusterName, kmsg.ACLOperationAll))
	client := newTestClient(t, b)
	createTopic(t, client, "t", 1, nil)
	if err := produceOne(t, client, "t"); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
}

// TestACLConsumerGroupNeedsRead: a consumer group member needs Read on
// the group (else GROUP_AUTHORIZATION_FAILED) and on the topic.
func TestACLConsumerGroupNeedsRead(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil,
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationCreate),
		grant(topicRT, literal, "t", kmsg.ACLOperationAll),
		grant(groupRT, prefixed, "ok-", kmsg.ACLOperationRead),
	)
	admin := newTestClient(t, b)
	createTopic(t, admin, "t", 1, nil)
	if err := produceOne(t, admin, "t"); err != nil {
		t.Fatal(err)
	}
	consume := func(group string) error {
		client := newTestClient(t, b, kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		defer client.Close()
		ctx := testContext(t, 20*time.Second)
		for ctx.Err() == nil {
			fetches := client.PollFetches(ctx)
			if err := fetches.Err0(); err != nil {
				return err
			}
			if fetches.NumRecords() > 0 {
				return client.CommitUncommittedOffsets(ctx)
			}
		}
		return ctx.Err()
	}
	if err := consume("ok-1"); err != nil {
		t.Fatalf("group with Read: %v", err)
	}
	if err := consume("other"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("group without Read: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
}

// TestACLAdminAPIs: CreateAcls, DescribeAcls and DeleteAcls over the
// wire, Kafka's validation, and ACLs surviving restarts. The bootstrap
// uses allow.everyone.if.no.acl.found: before any Cluster ACL exists,
// anyone may create the first ones.
func TestACLAdminAPIs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	props := map[string]string{"authorizer.class.name": standardAuthorizer, "allow.everyone.if.no.acl.found": "true"}
	b := startTestBroker(t, dir, props)
	client := newTestClient(t, b)
	ctx := testContext(t, 20*time.Second)

	create := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []acl.Binding{
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationAlter),
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationDescribe),
		grant(topicRT, prefixed, "orders-", kmsg.ACLOperationRead),
		{ResourceType: topicRT, ResourceName: "", PatternType: literal, Principal: anonymousPrincipal, Host: "*",
			Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}, // empty name: invalid
		{ResourceType: cluster, ResourceName: "other", PatternType: literal, Principal: anonymousPrincipal, Host: "*",
			Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeAllow}, // bad cluster name
		{ResourceType: topicRT, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeMatch, Principal: anonymousPrincipal,
			Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}, // MATCH is a filter only
	} {
		creation := kmsg.NewCreateACLsRequestCreation()
		creation.ResourceType, creation.ResourceName, creation.ResourcePatternType = c.ResourceType, c.ResourceName, c.PatternType
		creation.Principal, creation.Host, creation.Operation, creation.PermissionType = c.Principal, c.Host, c.Operation, c.Permission
		create.Creations = append(create.Creations, creation)
	}
	created, err := create.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	wantCodes := []int16{0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, result := range created.Results {
		if result.ErrorCode != wantCodes[i] {
			t.Errorf("creation %d: %v (%v), want %v", i, kerr.ErrorForCode(result.ErrorCode), result.ErrorMessage, kerr.ErrorForCode(wantCodes[i]))
		}
	}

	describe := func(client *kgo.Client, mutate func(*kmsg.DescribeACLsRequest)) *kmsg.DescribeACLsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if mutate != nil {
			mutate(req)
		}
		resp, err := req.RequestWith(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	countACLs := func(resp *kmsg.DescribeACLsResponse) int {
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	if resp := describe(client, nil); resp.ErrorCode != 0 || countACLs(resp) != 3 || len(resp.Resources) != 2 {
		t.Fatalf("describe all: error %v, %d resources, %d acls; want 2 resources, 3 acls", kerr.ErrorForCode(resp.ErrorCode), len(resp.Resources), countACLs(resp))
	}
	match := describe(client, func(r *kmsg.DescribeACLsRequest) {
		r.ResourceType, r.ResourcePatternType, r.ResourceName = topicRT, kmsg.ACLResourcePatternTypeMatch, kmsg.StringPtr("orders-eu")
	})
	if countACLs(match) != 1 || match.Resources[0].ResourceName != "orders-" {
		t.Fatalf("MATCH orders-eu: %+v", match.Resources)
	}
	if bad := describe(client, func(r *kmsg.DescribeACLsRequest) { r.Operation = kmsg.ACLOperationUnknown }); bad.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("describe with an UNKNOWN operation: %v, want INVALID_REQUEST", kerr.ErrorForCode(bad.ErrorCode))
	}

	// Restart without allow.everyone: the Cluster ACLs, now stored, let
	// the principal administer ACLs; everything else is denied.
	client.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, map[string]string{"authorizer.class.name": standardAuthorizer})
	client = newTestClient(t, b)
	if resp := describe(client, nil); countACLs(resp) != 3 {
		t.Fatalf("after restart: %d acls, want 3", countACLs(resp))
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	filter := kmsg.NewDeleteACLsRequestFilter()
	filter.ResourceType, filter.ResourcePatternType, filter.ResourceName = topicRT, prefixed, kmsg.StringPtr("orders-")
	filter.Operation, filter.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	bad := kmsg.NewDeleteACLsRequestFilter() // all UNKNOWN: INVALID_REQUEST alone
	del.Filters = append(del.Filters, filter, bad)
	deleted, err := del.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if deleted.Results[0].ErrorCode != 0 || len(deleted.Results[0].MatchingACLs) != 1 || deleted.Results[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete: %+v", deleted.Results)
	}
	client.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, map[string]string{"authorizer.class.name": standardAuthorizer})
	client = newTestClient(t, b)
	if resp := describe(client, nil); countACLs(resp) != 2 {
		t.Fatalf("after delete and restart: %d acls, want 2", countACLs(resp))
	}
	// Without Alter on the Cluster, CreateAcls is refused.
	if err := seedOne(b, refuse(cluster, literal, acl.ClusterName, kmsg.ACLOperationAlter)); err != nil {
		t.Fatal(err)
	}
	created, err = create.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if created.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateAcls denied Alter: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(created.Results[0].ErrorCode))
	}
}

// seedOne adds a binding to a running broker's authorizer.
func seedOne(b *Broker, binding acl.Binding) error {
	return b.authorizer.Create([]acl.Binding{binding})[0]
}

// TestACLAPIsWithoutAuthorizer: with no authorizer the ACL APIs answer
// SECURITY_DISABLED, and everything else is allowed as before.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	client := newTestClient(t, b)
	ctx := testContext(t, 10*time.Second)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := describe.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without authorizer: %v, want SECURITY_DISABLED", kerr.ErrorForCode(resp.ErrorCode))
	}
	create := kmsg.NewPtrCreateACLsRequest()
	creation := kmsg.NewCreateACLsRequestCreation()
	create.Creations = append(create.Creations, creation)
	created, err := create.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if created.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without authorizer: %v, want SECURITY_DISABLED", kerr.ErrorForCode(created.Results[0].ErrorCode))
	}
	createTopic(t, client, "t", 1, nil)
	if err := produceOne(t, client, "t"); err != nil {
		t.Fatalf("produce without authorizer: %v", err)
	}
}

// TestAuthorizerSettingsValidated: an unknown authorizer class or a
// malformed super.users stops the broker from starting.
func TestAuthorizerSettingsValidated(t *testing.T) {
	t.Parallel()
	for name, props := range map[string]map[string]string{
		"unknown class":     {"authorizer.class.name": "com.example.MyAuthorizer"},
		"super user format": {"authorizer.class.name": standardAuthorizer, "super.users": "admin"},
	} {
		if _, err := newBrokerConfig(props); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := newBrokerConfig(map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users": "User:a;User:b", "allow.everyone.if.no.acl.found": "true"}); err != nil {
		t.Fatal(err)
	}
}

// TestACLProduceAutoCreateNeedsCreate: Produce auto-creates a topic (our
// extension of Kafka's Metadata rule) only with Create on the Cluster or
// the topic; without it the topic is UNKNOWN_TOPIC_OR_PARTITION and is
// not created.
func TestACLProduceAutoCreateNeedsCreate(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil,
		grant(topicRT, prefixed, "auto-", kmsg.ACLOperationWrite),
		grant(topicRT, literal, "auto-created", kmsg.ACLOperationCreate))
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(wire.APIProduce, 12) // by name
	client := newTestClient(t, b, kgo.MaxVersions(versions))
	produce := func(topic string) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := client.Broker(1).Request(testContext(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce("auto-refused"); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to a new topic without Create: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if b.topicByName("auto-refused") != nil {
		t.Fatal("topic created without Create")
	}
	produce("auto-created")
	if b.topicByName("auto-created") == nil {
		t.Fatal("topic not created with Create on it")
	}
}

// A principal allowed to create a topic but not to describe its configs
// learns that the topic was created, not its configs: CreateTopics
// answers TOPIC_AUTHORIZATION_FAILED in the configs' error code.
func TestACLCreateTopicsHidesConfigsWithoutDescribeConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedACLs(t, dir, grant(topicRT, literal, "hidden", kmsg.ACLOperationCreate),
		grant(topicRT, literal, "shown", kmsg.ACLOperationCreate),
		grant(topicRT, literal, "shown", kmsg.ACLOperationDescribeConfigs))
	b := startTestBroker(t, dir, map[string]string{"authorizer.class.name": standardAuthorizer})
	client := newTestClient(t, b)
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"hidden", "shown"} {
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, 2, -1
		req.Topics = append(req.Topics, topic)
	}
	resp, err := req.RequestWith(testContext(t, 20*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range resp.Topics {
		if topic.ErrorCode != 0 {
			t.Fatalf("create %s: %v", topic.Topic, kerr.ErrorForCode(topic.ErrorCode))
		}
		hidden := topic.ConfigErrorCode == kerr.TopicAuthorizationFailed.Code && len(topic.Configs) == 0 && topic.NumPartitions == -1
		shown := topic.ConfigErrorCode == 0 && len(topic.Configs) > 0 && topic.NumPartitions == 2
		if topic.Topic == "hidden" && !hidden || topic.Topic == "shown" && !shown {
			t.Errorf("%s: config error %v, %d configs, %d partitions", topic.Topic,
				kerr.ErrorForCode(topic.ConfigErrorCode), len(topic.Configs), topic.NumPartitions)
		}
	}
}
