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
// a version both sides speak. v3+ carry the features: transaction.version
// is supported from 0 to 2 and finalized at the broker's
// transaction.version setting (Broker.transactionVersion, set by
// Start); clients switch to KIP-890 part 2 when it is finalized
// at 2. A level of 0 is not listed as finalized, as Kafka omits features at
// level 0.
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
	if version >= 3 {
		appendFeatures(resp, c.broker.transactionVersion)
	}
	resp.SetVersion(version)
	c.respond(r, resp.AppendTo)
}

// transactionVersionFeature is the feature KIP-890 part 2 is finalized by.
const transactionVersionFeature = "transaction.version"

// appendFeatures lists the supported and finalized features.
func appendFeatures(resp *kmsg.ApiVersionsResponse, transactionVersion int16) {
	supported := kmsg.NewApiVersionsResponseSupportedFeature()
	supported.Name, supported.MinVersion, supported.MaxVersion = transactionVersionFeature, 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, supported)
	resp.FinalizedFeaturesEpoch = 1
	if transactionVersion > 0 {
		finalized := kmsg.NewApiVersionsResponseFinalizedFeature()
		finalized.Name, finalized.MinVersionLevel, finalized.MaxVersionLevel = transactionVersionFeature, transactionVersion, transactionVersion
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, finalized)
	}
}

func appendVersionRanges(resp *kmsg.ApiVersionsResponse) {
	for _, vr := range versions.Ranges() {
		key := kmsg.NewApiVersionsResponseApiKey()
		key.ApiKey, key.MinVersion, key.MaxVersion = vr.Key, vr.Min, vr.Max
		resp.ApiKeys = append(resp.ApiKeys, key)
	}
}
