package broker

import "github.com/exactly-eos/exactly/broker/acl"

// aclService is the broker as api.ACLs, the service package api's handlers see.
type aclService struct{ b *Broker }

// Create is [acl.Authorizer.Create]; without an authorizer every binding
// fails with SECURITY_DISABLED.
func (s aclService) Create(bindings []acl.Binding) []error {
	if s.b.authorizer == nil {
		errs := make([]error, len(bindings))
		for i := range errs {
			errs[i] = errSecurityDisabled
		}
		return errs
	}
	return s.b.authorizer.Create(bindings)
}

// Delete is [acl.Authorizer.Delete]; without an authorizer every filter
// fails with SECURITY_DISABLED.
func (s aclService) Delete(filters []acl.Filter) []acl.DeleteResult {
	if s.b.authorizer == nil {
		results := make([]acl.DeleteResult, len(filters))
		for i := range results {
			results[i].Err = errSecurityDisabled
		}
		return results
	}
	return s.b.authorizer.Delete(filters)
}

// Describe is [acl.Authorizer.Describe]; nothing without an authorizer.
func (s aclService) Describe(filter acl.Filter) []acl.Binding {
	if s.b.authorizer == nil {
		return nil
	}
	return s.b.authorizer.Describe(filter)
}
