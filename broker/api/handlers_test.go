package api

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/auth"
)

// These tests drive handlers with nothing but a Request: a fake
// authorizer and fake services. That a handler can be tested so is the
// boundary package api exists for: it reaches the broker only through
// what its Request exposes.

// fakeAuth allows what allowed says, for principal "User:alice".
type fakeAuth struct {
	enabled bool
	allowed func(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

func (a fakeAuth) Authorized(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return !a.enabled || a.allowed(op, rt, name)
}
func (a fakeAuth) AuthorizedOnAnyTopic(kmsg.ACLOperation) bool { return !a.enabled }
func (a fakeAuth) Enabled() bool                               { return a.enabled }
func (a fakeAuth) Principal() string                           { return "User:alice" }

// fakeACLs records the bindings it is asked to create and refuses those
// whose principal is empty.
type fakeACLs struct{ created []acl.Binding }

func (f *fakeACLs) Create(bindings []acl.Binding) []error {
	errs := make([]error, len(bindings))
	for i, b := range bindings {
		if b.Principal == "" {
			errs[i] = acl.ErrInvalid
			continue
		}
		f.created = append(f.created, b)
	}
	return errs
}
func (f *fakeACLs) Delete([]acl.Filter) []acl.DeleteResult { return nil }
func (f *fakeACLs) Describe(acl.Filter) []acl.Binding      { return nil }

// fakeCredentials would fail a test that reaches it.
type fakeCredentials struct{ t *testing.T }

func (f fakeCredentials) Describe([]string) []auth.DescribeResult {
	f.t.Error("credentials described despite the refusal")
	return nil
}
func (f fakeCredentials) Alter([]auth.Deletion, []auth.Upsertion) []auth.AlterResult {
	f.t.Error("credentials altered despite the refusal")
	return nil
}

func serve(t *testing.T, r *Request, req kmsg.Request) kmsg.Response {
	t.Helper()
	h, ok := handlers[req.Key()]
	if !ok {
		t.Fatalf("no handler for %s", kmsg.NameForKey(req.Key()))
	}
	return h.Serve(context.Background(), r, req)
}

func createACLsRequest(principals ...string) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, p := range principals {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "events", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = p, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	return req
}

func TestCreateACLsThroughTheServiceOnly(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	clusterAlter := func(op kmsg.ACLOperation, rt kmsg.ACLResourceType, _ string) bool {
		return op == kmsg.ACLOperationAlter && rt == kmsg.ACLResourceTypeCluster
	}
	cases := []struct {
		name        string
		auth        fakeAuth
		wantCodes   []int16
		wantCreated int
	}{
		{"no authorizer", fakeAuth{enabled: false}, []int16{kerr.SecurityDisabled.Code, kerr.SecurityDisabled.Code}, 0},
		{"without Alter on the cluster", fakeAuth{enabled: true, allowed: func(kmsg.ACLOperation, kmsg.ACLResourceType, string) bool { return false }},
			[]int16{kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code}, 0},
		{"allowed: the service decides each binding", fakeAuth{enabled: true, allowed: clusterAlter}, []int16{0, kerr.InvalidRequest.Code}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acls := &fakeACLs{}
			r := &Request{Auth: c.auth, Logger: logger, Services: &Services{ACLs: acls}}
			resp := serve(t, r, createACLsRequest("User:bob", "")).(*kmsg.CreateACLsResponse)
			if len(resp.Results) != len(c.wantCodes) {
				t.Fatalf("%d results, want %d", len(resp.Results), len(c.wantCodes))
			}
			for i, result := range resp.Results {
				if result.ErrorCode != c.wantCodes[i] {
					t.Errorf("result %d: code %d, want %d", i, result.ErrorCode, c.wantCodes[i])
				}
			}
			if len(acls.created) != c.wantCreated {
				t.Errorf("service created %d bindings, want %d", len(acls.created), c.wantCreated)
			}
		})
	}
}

func TestDescribeUserSCRAMCredentialsRefusedBeforeTheService(t *testing.T) {
	t.Parallel()
	r := &Request{
		Auth:     fakeAuth{enabled: true, allowed: func(kmsg.ACLOperation, kmsg.ACLResourceType, string) bool { return false }},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Services: &Services{Credentials: fakeCredentials{t}},
	}
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	resp := serve(t, r, req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("code %d, want CLUSTER_AUTHORIZATION_FAILED", resp.ErrorCode)
	}
}

func TestRegisterRefusesADuplicateKey(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second handler for one API key was accepted")
		}
	}()
	register(kmsg.CreateACLs.Int16(), 0, 3, InReader, func(context.Context, *Request, *kmsg.CreateACLsRequest) kmsg.Response { return nil })
}

// DescribeLogDirs needs Describe on the cluster: refused, v3+ say
// CLUSTER_AUTHORIZATION_FAILED and v1 lists nothing, as Kafka does; the
// service is not asked.
func TestDescribeLogDirsRefusedWithoutClusterDescribe(t *testing.T) {
	t.Parallel()
	r := &Request{
		Auth:     fakeAuth{enabled: true, allowed: func(kmsg.ACLOperation, kmsg.ACLResourceType, string) bool { return false }},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Services: &Services{}, // a nil Topics: asking it would panic
	}
	for _, version := range []int16{1, 3, 4} {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = version
		resp := serve(t, r, req).(*kmsg.DescribeLogDirsResponse)
		want := kerr.ClusterAuthorizationFailed.Code
		if version < 3 {
			want = 0
		}
		if resp.ErrorCode != want || len(resp.Dirs) != 0 {
			t.Errorf("v%d: code %d, %d dirs; want code %d and none", version, resp.ErrorCode, len(resp.Dirs), want)
		}
	}
}
