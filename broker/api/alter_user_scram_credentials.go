package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// AlterUserScramCredentials v0 (API 51) deletes and upserts SCRAM
// credentials in the credential store ([Credentials.Alter], package
// [auth]), validated as Kafka's ScramControlManager does: a user once per
// request (DUPLICATE_RESOURCE),
// a non-empty name and iterations in 4096..16384 (UNACCEPTABLE_CREDENTIAL),
// a SCRAM mechanism (UNSUPPORTED_SASL_MECHANISM), deletions of existing
// credentials only (RESOURCE_NOT_FOUND). An upsertion carries the salt
// and the salted password (the client ran PBKDF2); the store keeps
// StoredKey and ServerKey. The valid changes are written together, durably,
// before the answer; a failed write fails them all (KAFKA_STORAGE_ERROR).
// The write runs on the connection's reader goroutine: this is an
// administrative request, rare, and one file. New credentials apply to
// later authentications; sessions already authenticated go on.
func init() {
	register(wire.APIAlterUserSCRAMCredentials, 0, 0, InReader, alterUserSCRAMCredentials)
}

func alterUserSCRAMCredentials(_ context.Context, r *Request, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !r.AuthorizedCluster(kmsg.ACLOperationAlter) {
		// Kafka answers every user named with CLUSTER_AUTHORIZATION_FAILED.
		refused := map[string]bool{}
		names := make([]string, 0, len(req.Deletions)+len(req.Upsertions))
		for _, d := range req.Deletions {
			names = append(names, d.Name)
		}
		for _, u := range req.Upsertions {
			names = append(names, u.Name)
		}
		for _, name := range names {
			if refused[name] {
				continue
			}
			refused[name] = true
			result := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			result.User = name
			result.ErrorCode, result.ErrorMessage = errcode.Of(errcode.ErrClusterAuthorization), errcode.Message(errcode.ErrClusterAuthorization)
			resp.Results = append(resp.Results, result)
		}
		return resp
	}
	deletions := make([]auth.Deletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		deletions = append(deletions, auth.Deletion{User: d.Name, Mechanism: d.Mechanism})
	}
	upsertions := make([]auth.Upsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		upsertions = append(upsertions, auth.Upsertion{User: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations,
			Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	for _, altered := range r.Credentials.Alter(deletions, upsertions) {
		result := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		result.User = altered.User
		if altered.Err != nil {
			result.ErrorCode, result.ErrorMessage = errcode.Of(altered.Err), errcode.Message(altered.Err)
			if errors.Is(altered.Err, auth.ErrStorage) {
				r.Logger.Error("SCRAM credentials not changed", "user", altered.User, "error", altered.Err)
			}
		} else {
			r.Logger.Info("SCRAM credentials changed", "user", altered.User, "principal", r.Auth.Principal())
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
