package acl

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func bind(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func mustOpen(t *testing.T, opts Options, bindings ...Binding) *Authorizer {
	t.Helper()
	a, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range a.Create(bindings) {
		if err != nil {
			t.Fatalf("create %v: %v", bindings[i], err)
		}
	}
	return a
}

// TestAuthorizeRules walks Kafka's rules one by one.
func TestAuthorizeRules(t *testing.T) {
	const alice, bob, host = "User:alice", "User:bob", "10.0.0.1"
	cases := []struct {
		name      string
		opts      Options
		acls      []Binding
		principal string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		resource  string
		want      bool
	}{
		{"no acls, default deny", Options{}, nil, alice, kmsg.ACLOperationWrite, topic, "t", false},
		{"no acls, allow.everyone.if.no.acl.found", Options{AllowEveryoneIfNoACLFound: true}, nil, alice, kmsg.ACLOperationWrite, topic, "t", true},
		{"acl for another principal on the resource disables allow.everyone", Options{AllowEveryoneIfNoACLFound: true},
			[]Binding{bind(topic, literal, "t", bob, "*", kmsg.ACLOperationWrite, allow)}, alice, kmsg.ACLOperationWrite, topic, "t", false},
		{"acl on another resource leaves allow.everyone", Options{AllowEveryoneIfNoACLFound: true},
			[]Binding{bind(topic, literal, "u", bob, "*", kmsg.ACLOperationWrite, allow)}, alice, kmsg.ACLOperationWrite, topic, "t", true},
		{"literal allow", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationWrite, allow)}, alice, kmsg.ACLOperationWrite, topic, "t", true},
		{"literal is exact", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationWrite, allow)}, alice, kmsg.ACLOperationWrite, topic, "tt", false},
		{"literal * matches every name", Options{}, []Binding{bind(topic, literal, "*", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "anything", true},
		{"prefixed matches longer names", Options{}, []Binding{bind(topic, prefix, "orders-", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "orders-eu", true},
		{"prefixed matches the prefix itself", Options{}, []Binding{bind(topic, prefix, "orders-", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "orders-", true},
		{"prefixed does not match other names", Options{}, []Binding{bind(topic, prefix, "orders-", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "order", false},
		{"other resource type", Options{}, []Binding{bind(group, literal, "t", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"User:* matches every principal", Options{}, []Binding{bind(topic, literal, "t", WildcardPrincipal, "*", kmsg.ACLOperationRead, allow)}, bob, kmsg.ACLOperationRead, topic, "t", true},
		{"other principal", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationRead, allow)}, bob, kmsg.ACLOperationRead, topic, "t", false},
		{"host must match", Options{}, []Binding{bind(topic, literal, "t", alice, "10.0.0.2", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"host matches", Options{}, []Binding{bind(topic, literal, "t", alice, host, kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationRead, topic, "t", true},
		{"deny beats allow", Options{}, []Binding{
			bind(topic, literal, "t", alice, "*", kmsg.ACLOperationWrite, allow),
			bind(topic, prefix, "t", WildcardPrincipal, "*", kmsg.ACLOperationWrite, deny)}, alice, kmsg.ACLOperationWrite, topic, "t", false},
		{"deny ALL denies everything", Options{}, []Binding{
			bind(topic, literal, "*", alice, "*", kmsg.ACLOperationAll, allow),
			bind(topic, literal, "t", alice, "*", kmsg.ACLOperationAll, deny)}, alice, kmsg.ACLOperationDescribe, topic, "t", false},
		{"allow ALL allows everything", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationAll, allow)}, alice, kmsg.ACLOperationAlterConfigs, topic, "t", true},
		{"READ implies DESCRIBE", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationRead, allow)}, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"WRITE implies DESCRIBE", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationWrite, allow)}, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"DELETE implies DESCRIBE", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationDelete, allow)}, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"ALTER implies DESCRIBE", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationAlter, allow)}, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"CREATE does not imply DESCRIBE", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationCreate, allow)}, alice, kmsg.ACLOperationDescribe, topic, "t", false},
		{"DESCRIBE does not imply READ", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationDescribe, allow)}, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", Options{}, []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationAlterConfigs, allow)}, alice, kmsg.ACLOperationDescribeConfigs, topic, "t", true},
		{"implication is for ALLOW only: DENY READ does not deny DESCRIBE", Options{}, []Binding{
			bind(topic, literal, "t", alice, "*", kmsg.ACLOperationDescribe, allow),
			bind(topic, literal, "t", alice, "*", kmsg.ACLOperationRead, deny)}, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"super user bypasses deny", Options{SuperUsers: []string{alice}}, []Binding{
			bind(topic, literal, "t", alice, "*", kmsg.ACLOperationAll, deny)}, alice, kmsg.ACLOperationWrite, topic, "t", true},
		{"super.users is per principal", Options{SuperUsers: []string{alice}}, nil, bob, kmsg.ACLOperationWrite, topic, "t", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := mustOpen(t, tc.opts, tc.acls...)
			if got := a.Authorize(tc.principal, host, tc.op, tc.rt, tc.resource); got != tc.want {
				t.Fatalf("Authorize(%s, %s, %s %q) = %v, want %v", tc.principal, tc.op, tc.rt, tc.resource, got, tc.want)
			}
		})
	}
}

// referenceAuthorize is a brute-force restatement of Kafka's rules, for
// the property test: the set of operations each binding grants or
// refuses, and the set of resource names it covers, spelled out.
func referenceAuthorize(opts Options, bindings []Binding, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	for _, s := range opts.SuperUsers {
		if s == principal {
			return true
		}
	}
	grants := map[kmsg.ACLOperation][]kmsg.ACLOperation{
		kmsg.ACLOperationRead:         {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe},
		kmsg.ACLOperationWrite:        {kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe},
		kmsg.ACLOperationDelete:       {kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe},
		kmsg.ACLOperationAlter:        {kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
		kmsg.ACLOperationAlterConfigs: {kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationDescribeConfigs},
	}
	covers := func(b Binding) bool {
		if b.ResourceType != rt {
			return false
		}
		if b.PatternType == literal {
			return b.ResourceName == name || b.ResourceName == "*"
		}
		return len(b.ResourceName) <= len(name) && name[:len(b.ResourceName)] == b.ResourceName
	}
	ops := func(b Binding) []kmsg.ACLOperation {
		if b.Operation == kmsg.ACLOperationAll {
			var all []kmsg.ACLOperation
			for o := kmsg.ACLOperationAll; o <= kmsg.ACLOperationDescribeTokens; o++ {
				all = append(all, o)
			}
			return all
		}
		if g, ok := grants[b.Operation]; ok && b.Permission == allow {
			return g
		}
		return []kmsg.ACLOperation{b.Operation}
	}
	applies := func(b Binding) bool {
		if !covers(b) || (b.Principal != principal && b.Principal != "User:*") || (b.Host != host && b.Host != "*") {
			return false
		}
		for _, o := range ops(b) {
			if o == op {
				return true
			}
		}
		return false
	}
	anyCovers, anyAllow := false, false
	for _, b := range bindings {
		anyCovers = anyCovers || covers(b)
		if applies(b) {
			if b.Permission == deny {
				return false
			}
			anyAllow = true
		}
	}
	if anyAllow {
		return true
	}
	return !anyCovers && opts.AllowEveryoneIfNoACLFound
}

// TestAuthorizeMatchesReference checks the matcher against
// referenceAuthorize on random ACL sets and questions over small
// alphabets, so overlaps (prefixes, wildcards, implied operations,
// deny/allow pairs) are frequent.
func TestAuthorizeMatchesReference(t *testing.T) {
	names := []string{"a", "ab", "abc", "b", "*"}
	principals := []string{"User:alice", "User:bob", "User:*"}
	hosts := []string{"10.0.0.1", "10.0.0.2", "*"}
	types := []kmsg.ACLResourceType{topic, group}
	pick := func(r *rand.Rand, n int) int { return r.IntN(n) }
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := Options{AllowEveryoneIfNoACLFound: r.IntN(2) == 0}
		if r.IntN(4) == 0 {
			opts.SuperUsers = []string{"User:bob"}
		}
		var bindings []Binding
		for n := r.IntN(6); n > 0; n-- {
			pt := literal
			if r.IntN(2) == 0 {
				pt = prefix
			}
			perm := allow
			if r.IntN(3) == 0 {
				perm = deny
			}
			bindings = append(bindings, bind(types[pick(r, 2)], pt, names[pick(r, len(names))], principals[pick(r, 3)],
				hosts[pick(r, 3)], kmsg.ACLOperation(2+r.IntN(13)), perm))
		}
		a := mustOpen(t, opts, bindings...)
		for q := 0; q < 50; q++ {
			principal := principals[pick(r, 2)]
			host := hosts[pick(r, 2)]
			op := kmsg.ACLOperation(3 + r.IntN(12))
			rt := types[pick(r, 2)]
			name := names[pick(r, 4)] + []string{"", "c", "bc"}[pick(r, 3)]
			got := a.Authorize(principal, host, op, rt, name)
			want := referenceAuthorize(opts, bindings, principal, host, op, rt, name)
			if got != want {
				t.Fatalf("seed %d: Authorize(%s@%s, %s, %s %q) = %v, reference %v\nacls: %v\noptions: %+v",
					seed, principal, host, op, rt, name, got, want, bindings, opts)
			}
		}
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	const alice, host = "User:alice", "10.0.0.1"
	write := kmsg.ACLOperationWrite
	cases := []struct {
		name string
		acls []Binding
		want bool
	}{
		{"nothing", nil, false},
		{"literal allow", []Binding{bind(topic, literal, "t", alice, "*", write, allow)}, true},
		{"allow on a group does not count", []Binding{bind(group, literal, "t", alice, "*", write, allow)}, false},
		{"other operation", []Binding{bind(topic, literal, "t", alice, "*", kmsg.ACLOperationRead, allow)}, false},
		{"ALL counts", []Binding{bind(topic, prefix, "t", alice, "*", kmsg.ACLOperationAll, allow)}, true},
		{"literal denied by the same literal", []Binding{
			bind(topic, literal, "t", alice, "*", write, allow), bind(topic, literal, "t", alice, "*", write, deny)}, false},
		{"literal denied by a prefix", []Binding{
			bind(topic, literal, "tx", alice, "*", write, allow), bind(topic, prefix, "t", WildcardPrincipal, "*", write, deny)}, false},
		{"prefix not covered by a longer deny", []Binding{
			bind(topic, prefix, "t", alice, "*", write, allow), bind(topic, prefix, "tx", alice, "*", write, deny)}, true},
		{"deny on literal * denies all", []Binding{
			bind(topic, literal, "*", alice, "*", write, allow), bind(topic, literal, "*", alice, "*", write, deny)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := mustOpen(t, Options{}, tc.acls...)
			if got := a.AuthorizeByResourceType(alice, host, write, topic); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !mustOpen(t, Options{SuperUsers: []string{alice}}).AuthorizeByResourceType(alice, host, write, topic) {
		t.Fatal("super user refused")
	}
}

func TestValidate(t *testing.T) {
	good := bind(topic, literal, "t", "User:alice", "*", kmsg.ACLOperationRead, allow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	mutations := map[string]func(*Binding){
		"resource type ANY":   func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		"resource type 0":     func(b *Binding) { b.ResourceType = 0 },
		"resource type 99":    func(b *Binding) { b.ResourceType = 99 },
		"pattern MATCH":       func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"pattern ANY":         func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny },
		"operation ANY":       func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"operation 15":        func(b *Binding) { b.Operation = 15 },
		"permission ANY":      func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":          func(b *Binding) { b.ResourceName = "" },
		"cluster named other": func(b *Binding) { b.ResourceType, b.ResourceName = kmsg.ACLResourceTypeCluster, "c" },
		"principal no colon":  func(b *Binding) { b.Principal = "alice" },
		"principal no name":   func(b *Binding) { b.Principal = "User:" },
		"empty host":          func(b *Binding) { b.Host = "" },
	}
	for name, mutate := range mutations {
		b := good
		mutate(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

func ptr(s string) *string { return &s }

func TestFilters(t *testing.T) {
	acls := []Binding{
		bind(topic, literal, "orders", "User:alice", "*", kmsg.ACLOperationRead, allow),     // 0
		bind(topic, literal, "*", "User:bob", "*", kmsg.ACLOperationWrite, deny),            // 1
		bind(topic, prefix, "ord", "User:alice", "10.0.0.1", kmsg.ACLOperationWrite, allow), // 2
		bind(topic, prefix, "orders-eu", "User:*", "*", kmsg.ACLOperationRead, allow),       // 3
		bind(group, literal, "orders", "User:alice", "*", kmsg.ACLOperationRead, allow),     // 4
	}
	any := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	with := func(mutate func(*Filter)) Filter { f := any; mutate(&f); return f }
	cases := []struct {
		name   string
		filter Filter
		want   []int
	}{
		{"everything", any, []int{0, 1, 2, 3, 4}},
		{"topic only", with(func(f *Filter) { f.ResourceType = topic }), []int{0, 1, 2, 3}},
		{"ANY pattern, exact name", with(func(f *Filter) { f.ResourceName = ptr("orders") }), []int{0, 4}},
		{"LITERAL, exact name", with(func(f *Filter) { f.ResourceName, f.PatternType = ptr("*"), literal }), []int{1}},
		{"PREFIXED, no name", with(func(f *Filter) { f.PatternType = prefix }), []int{2, 3}},
		{"PREFIXED, exact name", with(func(f *Filter) { f.PatternType, f.ResourceName = prefix, ptr("ord") }), []int{2}},
		{"MATCH orders-eu-1", with(func(f *Filter) {
			f.ResourceType, f.PatternType, f.ResourceName = topic, kmsg.ACLResourcePatternTypeMatch, ptr("orders-eu-1")
		}), []int{1, 2, 3}},
		{"MATCH orders", with(func(f *Filter) {
			f.PatternType, f.ResourceName = kmsg.ACLResourcePatternTypeMatch, ptr("orders")
		}), []int{0, 1, 2, 4}},
		{"MATCH without a name", with(func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch }), []int{0, 1, 2, 3, 4}},
		{"principal exact (no wildcard expansion)", with(func(f *Filter) { f.Principal = ptr("User:bob") }), []int{1}},
		{"host", with(func(f *Filter) { f.Host = ptr("10.0.0.1") }), []int{2}},
		{"operation", with(func(f *Filter) { f.Operation = kmsg.ACLOperationWrite }), []int{1, 2}},
		{"permission", with(func(f *Filter) { f.Permission = deny }), []int{1}},
	}
	a := mustOpen(t, Options{}, acls...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.filter.Validate(); err != nil {
				t.Fatal(err)
			}
			got := a.Describe(tc.filter)
			var want []Binding
			for _, i := range tc.want {
				want = append(want, acls[i])
			}
			if len(got) != len(want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("got %v\nwant %v", got, want)
				}
			}
		})
	}
	for name, f := range map[string]Filter{
		"unknown resource type":  with(func(f *Filter) { f.ResourceType = 0 }),
		"unknown pattern type":   with(func(f *Filter) { f.PatternType = 0 }),
		"unknown operation":      with(func(f *Filter) { f.Operation = 0 }),
		"unknown permission":     with(func(f *Filter) { f.Permission = 0 }),
		"out-of-range operation": with(func(f *Filter) { f.Operation = 42 }),
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

func TestCreateDeleteAndStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acls.json")
	a := mustOpen(t, Options{Path: path})
	b1 := bind(topic, literal, "t", "User:alice", "*", kmsg.ACLOperationWrite, allow)
	b2 := bind(topic, prefix, "p-", "User:*", "*", kmsg.ACLOperationRead, deny)
	bad := bind(topic, literal, "", "User:alice", "*", kmsg.ACLOperationWrite, allow)
	errs := a.Create([]Binding{b1, b2, bad, b1})
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrInvalid) || errs[3] != nil {
		t.Fatalf("create errors: %v", errs)
	}
	if got := a.Bindings(); len(got) != 2 {
		t.Fatalf("bindings after create (a duplicate is stored once): %v", got)
	}

	reopened, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := reopened.Bindings(); len(got) != 2 || got[0] != b1 || got[1] != b2 {
		t.Fatalf("after reopen: %v", got)
	}
	if !reopened.Authorize("User:alice", "1.2.3.4", kmsg.ACLOperationWrite, topic, "t") {
		t.Fatal("reopened store does not allow what it stored")
	}

	// Two filters selecting the same binding both report it; a bad
	// filter fails alone.
	byName := Filter{ResourceType: topic, ResourceName: ptr("t"), PatternType: literal, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	byPrincipal := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: ptr("User:alice"),
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	badFilter := Filter{ResourceType: 0}
	results := reopened.Delete([]Filter{byName, byPrincipal, badFilter})
	if len(results[0].Deleted) != 1 || len(results[1].Deleted) != 1 || !errors.Is(results[2].Err, ErrInvalid) {
		t.Fatalf("delete results: %+v", results)
	}
	again, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Bindings(); len(got) != 1 || got[0] != b2 {
		t.Fatalf("after delete and reopen: %v", got)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"pattern_type": "PREFIXED"`) {
		t.Fatalf("store is not in Kafka's names:\n%s", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestStoreRefusesCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acls.json")
	for name, content := range map[string]string{
		"not json":      "{",
		"wrong version": `{"version": 9, "acls": []}`,
		"invalid acl":   `{"version": 1, "acls": [{"resource_type": "TOPIC", "resource_name": "", "pattern_type": "LITERAL", "principal": "User:a", "host": "*", "operation": "READ", "permission": "ALLOW"}]}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(Options{Path: path}); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

func TestStoreWriteFailureChangesNothing(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, Options{Path: filepath.Join(dir, "missing", "acls.json")})
	b := bind(topic, literal, "t", "User:alice", "*", kmsg.ACLOperationWrite, allow)
	if errs := a.Create([]Binding{b}); errs[0] == nil {
		t.Fatal("create succeeded though the store cannot be written")
	}
	if got := a.Bindings(); len(got) != 0 {
		t.Fatalf("a binding that was not stored was published: %v", got)
	}
}
