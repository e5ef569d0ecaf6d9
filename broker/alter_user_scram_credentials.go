package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/wire"
)

// AlterUserScramCredentials v0 (API 51) deletes and upserts SCRAM
// credentials in the credential store (broker/auth), validated as Kafka's
// ScramControlManager does: a user once per request (DUPLICATE_RESOURCE),
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
	register(wire.APIAlterUserSCRAMCredentials, 0, 0, kmsgHandler(handleAlterUserSCRAMCredentials))
}

func handleAlterUserSCRAMCredentials(c *connection, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !c.authorizedCluster(kmsg.ACLOperationAlter) {
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
			result.ErrorCode, result.ErrorMessage = errorCode(errClusterAuthorization), errorMessage(errClusterAuthorization)
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
	for _, r := range c.broker.credentials.Alter(deletions, upsertions) {
		result := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		result.User = r.User
		if r.Err != nil {
			result.ErrorCode, result.ErrorMessage = errorCode(r.Err), errorMessage(r.Err)
			if errors.Is(r.Err, auth.ErrStorage) {
				c.logger.Error("SCRAM credentials not changed", "user", r.User, "error", r.Err)
			}
		} else {
			c.logger.Info("SCRAM credentials changed", "user", r.User, "principal", c.principal())
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
