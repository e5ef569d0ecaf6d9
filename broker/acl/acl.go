// Package acl is the broker's authorizer in Kafka's model (KIP-11, KIP-290):
// access control entries bound to resource patterns, matched the way
// Kafka's StandardAuthorizer matches them. It is a pure library: no
// network; the only I/O is the store file ([Options.Path], loaded by
// [Open] and replaced on every change).
//
// A Binding says: Principal, from Host, is allowed (or denied) Operation on
// the resources of ResourceType whose names match ResourceName under
// PatternType. The rules, as Kafka defines them:
//
//   - Super users (super.users) are allowed everything, whatever the ACLs.
//   - A LITERAL pattern matches the resource of that exact name; the
//     literal name "*" matches every resource of its type. A PREFIXED
//     pattern matches every name that starts with it (including the name
//     equal to it).
//   - Principal "User:*" matches every principal; host "*" every host.
//   - Deny beats allow: one matching DENY binding denies, whatever allows.
//   - Implied operations apply to ALLOW bindings only: READ, WRITE, DELETE
//     and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS;
//     ALL implies every operation (and a DENY for ALL denies every one).
//   - When no binding matches the resource at all (for any principal), the
//     answer is allow.everyone.if.no.acl.found (default false); when some
//     binding matches the resource but none allows, the answer is deny.
//
// Filters (DescribeAcls, DeleteAcls) select bindings: ANY matches every
// value of a field, a nil name / principal / host matches every one, and
// pattern type MATCH selects the bindings that would apply to the named
// resource (the literal name, the literal "*", and every prefix of it).
package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the only valid name of the Cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, and the host, that matches everything.
const Wildcard = "*"

// WildcardPrincipal is the principal that matches every principal.
const WildcardPrincipal = "User:*"

// ErrInvalid marks a binding or filter that Kafka refuses with
// INVALID_REQUEST; the wrapped message says why.
var ErrInvalid = errors.New("invalid acl")

// Binding is one ACL: an access control entry bound to a resource pattern.
// Its enum fields marshal to JSON as Kafka's names ("TOPIC", "READ").
type Binding struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

// String renders the binding as Kafka's kafka-acls.sh lists it.
func (b Binding) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s) on %s:%s:%s",
		b.Principal, b.Host, b.Operation, b.Permission, b.ResourceType, b.PatternType, b.ResourceName)
}

// Filter selects bindings, as DescribeAcls and DeleteAcls send it.
type Filter struct {
	// ResourceType is a type, or ANY.
	ResourceType kmsg.ACLResourceType
	// ResourceName is a name, or nil for every name.
	ResourceName *string
	// PatternType is LITERAL or PREFIXED (that type, exact name), ANY
	// (any type, exact name) or MATCH (every binding that applies to the
	// named resource).
	PatternType kmsg.ACLResourcePatternType
	// Principal and Host are matched exactly (no wildcard expansion); nil
	// matches every value.
	Principal, Host *string
	// Operation and Permission are a value, or ANY.
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// knownResourceType reports whether t is a concrete resource type.
func knownResourceType(t kmsg.ACLResourceType) bool {
	return t >= kmsg.ACLResourceTypeTopic && t <= kmsg.ACLResourceTypeUser
}

// knownOperation reports whether op is a concrete operation (ALL included).
func knownOperation(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationAll && op <= kmsg.ACLOperationDescribeTokens
}

// Validate checks a binding as Kafka's CreateAcls does (AclApis and
// AclControlManager.validateNewAcl); an error wraps ErrInvalid.
func (b Binding) Validate() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case !knownResourceType(b.ResourceType):
		return invalid("invalid resource type %s", b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return invalid("invalid pattern type %s", b.PatternType)
	case !knownOperation(b.Operation):
		return invalid("invalid operation %s", b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return invalid("invalid permission type %s", b.Permission)
	case b.ResourceName == "":
		return invalid("invalid empty resource name")
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return invalid("the only valid name for the CLUSTER resource is %s", ClusterName)
	case b.Host == "":
		return invalid("invalid empty host")
	}
	if kind, name, ok := strings.Cut(b.Principal, ":"); !ok || kind == "" || name == "" {
		return invalid("principal %q is not of the form Type:name (e.g. User:alice)", b.Principal)
	}
	return nil
}

// Validate checks a filter as Kafka does (AclControlManager.validateFilter:
// no field may be UNKNOWN); an error wraps ErrInvalid.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType != kmsg.ACLResourceTypeAny && !knownResourceType(f.ResourceType):
		return fmt.Errorf("%w: unknown resource type %s in the filter", ErrInvalid, f.ResourceType)
	case f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: unknown pattern type %s in the filter", ErrInvalid, f.PatternType)
	case f.Operation != kmsg.ACLOperationAny && !knownOperation(f.Operation):
		return fmt.Errorf("%w: unknown operation %s in the filter", ErrInvalid, f.Operation)
	case f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("%w: unknown permission type %s in the filter", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b (Kafka's
// AclBindingFilter.matches: ResourcePatternFilter and
// AccessControlEntryFilter).
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) && f.matchesEntry(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch:
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return name == b.ResourceName
	}
	return patternMatches(b, name)
}

func (f Filter) matchesEntry(b Binding) bool {
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == b.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission)
}

// patternMatches reports whether b's resource pattern covers the resource
// named name (of b's type): the literal name, the literal "*", or a prefix.
func patternMatches(b Binding, name string) bool {
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// impliesDescribe are the operations whose ALLOW also allows DESCRIBE.
func impliesDescribe(op kmsg.ACLOperation) bool {
	switch op {
	case kmsg.ACLOperationDescribe, kmsg.ACLOperationRead, kmsg.ACLOperationWrite,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
		return true
	}
	return false
}

// impliesDescribeConfigs are the operations whose ALLOW also allows
// DESCRIBE_CONFIGS.
func impliesDescribeConfigs(op kmsg.ACLOperation) bool {
	return op == kmsg.ACLOperationDescribeConfigs || op == kmsg.ACLOperationAlterConfigs
}

// result is what one binding says about one request.
type result int8

const (
	noResult result = iota
	allowed
	denied
)

// entryResult is Kafka's StandardAuthorizerData.findResult: what b (whose
// pattern already matches the resource) says about principal asking for op
// from host.
func entryResult(b Binding, principal, host string, op kmsg.ACLOperation) result {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return noResult
	}
	if b.Host != Wildcard && b.Host != host {
		return noResult
	}
	if b.Operation != kmsg.ACLOperationAll {
		if b.Permission == kmsg.ACLPermissionTypeAllow {
			switch op {
			case kmsg.ACLOperationDescribe:
				if !impliesDescribe(b.Operation) {
					return noResult
				}
			case kmsg.ACLOperationDescribeConfigs:
				if !impliesDescribeConfigs(b.Operation) {
					return noResult
				}
			default:
				if op != b.Operation {
					return noResult
				}
			}
		} else if op != b.Operation {
			return noResult
		}
	}
	if b.Permission == kmsg.ACLPermissionTypeAllow {
		return allowed
	}
	return denied
}
