package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// ApiVersions v0–4 lists the version range of every API registered in this
// package (the version table is built from the handlers' register calls).
// A version we do not know is answered, as Kafka does, with a v0 response
// carrying UNSUPPORTED_VERSION and our ranges, so the client can retry with
// a version both sides speak. No features (e.g. transaction.version) are
// advertised yet.
func init() {
	register(wire.APIVersions, 0, 4, handleAPIVersions)
}

func handleAPIVersions(c *connection, r *request) {
	resp := kmsg.NewPtrApiVersionsResponse()
	version := r.header.APIVersion
	if !versions.Supports(wire.APIVersions, version) {
		r.release()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		appendVersionRanges(resp)
		resp.SetVersion(0)
		c.respond(r, resp.AppendTo)
		return
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(version)
	if err := req.ReadFrom(r.body); err != nil {
		// Kafka answers a malformed ApiVersions with INVALID_REQUEST.
		r.release()
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.SetVersion(0)
		c.respond(r, resp.AppendTo)
		return
	}
	r.release()
	appendVersionRanges(resp)
	resp.SetVersion(version)
	c.respond(r, resp.AppendTo)
}

func appendVersionRanges(resp *kmsg.ApiVersionsResponse) {
	for _, vr := range versions.Ranges() {
		key := kmsg.NewApiVersionsResponseApiKey()
		key.ApiKey, key.MinVersion, key.MaxVersion = vr.Key, vr.Min, vr.Max
		resp.ApiKeys = append(resp.ApiKeys, key)
	}
}
