package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeUserScramCredentials v0 (API 50) lists users' SCRAM credentials
// (mechanism and iterations, never keys) from the credential store
// ([Credentials.Describe], package auth), as Kafka's ScramImage.describe
// does: no users (null or empty) lists every user that has one; a user
// named twice is DUPLICATE_RESOURCE, a user without credentials
// RESOURCE_NOT_FOUND, each with Kafka's message. The store is this broker's: credentials are not
// replicated between the brokers of a cluster.
func init() {
	register(wire.APIDescribeUserSCRAMCredentials, 0, 0, InReader, describeUserSCRAMCredentials)
}

func describeUserSCRAMCredentials(_ context.Context, r *Request, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !r.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrClusterAuthorization), errcode.Message(errcode.ErrClusterAuthorization)
		return resp
	}
	users := make([]string, 0, len(req.Users))
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	for _, described := range r.Credentials.Describe(users) {
		result := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		result.User = described.User
		result.ErrorCode, result.ErrorMessage = errcode.Of(described.Err), errcode.Message(described.Err)
		for _, info := range described.Credentials {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = info.Mechanism.ScramType(), int32(info.Iterations)
			result.CredentialInfos = append(result.CredentialInfos, ci)
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
