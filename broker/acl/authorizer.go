package acl

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configure an Authorizer.
type Options struct {
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: the
	// answer for a resource no binding matches.
	AllowEveryoneIfNoACLFound bool
	// Path is the store file; "" keeps the ACLs in memory only (tests).
	Path string
}

// Authorizer answers authorization questions and holds the ACLs. Checks
// read an immutable snapshot through an atomic pointer and never wait;
// changes are serialized by mu, written to the store file, and only then
// published, so a change a client saw acknowledged survives a restart.
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool
	path         string

	// mu serializes Create and Delete, including the store write; checks
	// never take it.
	mu sync.Mutex
	// current is the published ACL set; replaced whole, never modified.
	current atomic.Pointer[snapshot]
}

// snapshot is one immutable ACL set.
type snapshot struct {
	// bindings are distinct, in creation order.
	bindings []Binding
	// byType indexes bindings by resource type (same elements).
	byType map[kmsg.ACLResourceType][]Binding
}

func newSnapshot(bindings []Binding) *snapshot {
	s := &snapshot{bindings: bindings, byType: map[kmsg.ACLResourceType][]Binding{}}
	for _, b := range bindings {
		s.byType[b.ResourceType] = append(s.byType[b.ResourceType], b)
	}
	return s
}

// Open loads the ACLs from opts.Path (none if the file does not exist).
func Open(opts Options) (*Authorizer, error) {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: opts.AllowEveryoneIfNoACLFound, path: opts.Path}
	for _, principal := range opts.SuperUsers {
		a.superUsers[principal] = true
	}
	var bindings []Binding
	if opts.Path != "" {
		loaded, err := load(opts.Path)
		if err != nil {
			return nil, err
		}
		bindings = loaded
	}
	a.current.Store(newSnapshot(bindings))
	return a, nil
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize reports whether principal, connecting from host (an IP
// address), may perform op on the resource of type rt named name. It is
// Kafka's StandardAuthorizerData.authorize (the package doc has the rules).
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	matchedResource, allow := false, false
	for _, b := range a.current.Load().byType[rt] {
		if !patternMatches(b, name) {
			continue
		}
		matchedResource = true
		switch entryResult(b, principal, host, op) {
		case denied:
			return false
		case allowed:
			allow = true
		}
	}
	if allow {
		return true
	}
	return !matchedResource && a.allowIfNoACL
}

// AuthorizeByResourceType reports whether principal may perform op on at
// least one resource of type rt: Kafka's Authorizer.authorizeByResourceType
// (used by InitProducerId without a transactional id, which accepts Write
// on any topic). A literal or prefixed ALLOW counts unless a DENY covers
// it: the same literal name, or a prefix of it; a DENY on the literal "*"
// denies all.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	// Kafka first asks about a made-up name, so super users and
	// allow.everyone.if.no.acl.found answer as for any resource.
	if a.Authorize(principal, host, op, rt, "hardcode") {
		return true
	}
	denyLiteral, denyPrefixed := map[string]bool{}, map[string]bool{}
	var allows []Binding
	wildcardAllow := false
	for _, b := range a.current.Load().byType[rt] {
		if b.Host != host && b.Host != Wildcard {
			continue
		}
		if b.Principal != principal && b.Principal != WildcardPrincipal {
			continue
		}
		if b.Operation != op && b.Operation != kmsg.ACLOperationAll {
			continue
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
				if b.ResourceName == Wildcard {
					return false
				}
				denyLiteral[b.ResourceName] = true
			} else {
				denyPrefixed[b.ResourceName] = true
			}
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == Wildcard {
			wildcardAllow = true // decided after every DENY is seen
			continue
		}
		allows = append(allows, b)
	}
	if wildcardAllow {
		return true
	}
	for _, b := range allows {
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && denyLiteral[b.ResourceName] {
			continue
		}
		dominated := false
		for end := 1; end <= len(b.ResourceName) && !dominated; end++ {
			dominated = denyPrefixed[b.ResourceName[:end]]
		}
		if !dominated {
			return true
		}
	}
	return false
}

// Bindings returns every ACL, in creation order.
func (a *Authorizer) Bindings() []Binding {
	return slices.Clone(a.current.Load().bindings)
}

// Describe returns the ACLs f selects. The filter must be valid.
func (a *Authorizer) Describe(f Filter) []Binding {
	var out []Binding
	for _, b := range a.current.Load().bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Create adds bindings; it returns one error per binding (nil for
// success). An invalid binding's error wraps ErrInvalid; adding a binding
// that exists is a success that changes nothing, as in Kafka. The store
// is written once, before the new set is published; if that fails every
// valid binding gets the error and nothing changes.
func (a *Authorizer) Create(bindings []Binding) []error {
	errs := make([]error, len(bindings))
	a.mu.Lock()
	defer a.mu.Unlock()
	current := a.current.Load().bindings
	next := slices.Clone(current)
	var valid []int
	for i, b := range bindings {
		if err := b.Validate(); err != nil {
			errs[i] = err
			continue
		}
		valid = append(valid, i)
		if !slices.Contains(next, b) {
			next = append(next, b)
		}
	}
	if len(next) == len(current) {
		return errs
	}
	if err := a.save(next); err != nil {
		for _, i := range valid {
			errs[i] = err
		}
		return errs
	}
	a.current.Store(newSnapshot(next))
	return errs
}

// DeleteResult is what one DeleteAcls filter did.
type DeleteResult struct {
	// Err is the filter's error (wraps ErrInvalid for a bad filter).
	Err error
	// Deleted are the bindings the filter matched and removed.
	Deleted []Binding
}

// Delete removes the bindings each filter selects. As in Kafka, every
// filter is matched against the ACLs as they were before the request, so
// a binding two filters select is reported by both. The store is written
// once before the new set is published; if that fails, every filter that
// matched something gets the error and nothing changes.
func (a *Authorizer) Delete(filters []Filter) []DeleteResult {
	results := make([]DeleteResult, len(filters))
	a.mu.Lock()
	defer a.mu.Unlock()
	current := a.current.Load().bindings
	remove := map[Binding]bool{}
	for i, f := range filters {
		if err := f.Validate(); err != nil {
			results[i].Err = err
			continue
		}
		for _, b := range current {
			if f.Matches(b) {
				results[i].Deleted = append(results[i].Deleted, b)
				remove[b] = true
			}
		}
	}
	if len(remove) == 0 {
		return results
	}
	next := make([]Binding, 0, len(current)-len(remove))
	for _, b := range current {
		if !remove[b] {
			next = append(next, b)
		}
	}
	if err := a.save(next); err != nil {
		for i := range results {
			if results[i].Err == nil && len(results[i].Deleted) > 0 {
				results[i] = DeleteResult{Err: fmt.Errorf("delete acls: %w", err)}
			}
		}
		return results
	}
	a.current.Store(newSnapshot(next))
	return results
}
