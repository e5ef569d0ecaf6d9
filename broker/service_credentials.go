package broker

import "github.com/exactly-eos/exactly/broker/auth"

// credentialService is the broker as api.Credentials, the service package api's handlers see.
type credentialService struct{ b *Broker }

// Describe is [auth.Store.Describe] on the broker's credential store.
func (s credentialService) Describe(users []string) []auth.DescribeResult {
	return s.b.credentials.Describe(users)
}

// Alter is [auth.Store.Alter] on the broker's credential store.
func (s credentialService) Alter(deletions []auth.Deletion, upsertions []auth.Upsertion) []auth.AlterResult {
	return s.b.credentials.Alter(deletions, upsertions)
}
