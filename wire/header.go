package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrHeaderTruncated means a request or response header ended early.
var ErrHeaderTruncated = errors.New("header truncated")

// RequestHeader is a parsed Kafka request header (v0, v1 or v2).
//
//	v0: api_key int16, api_version int16, correlation_id int32
//	v1: v0 + client_id NULLABLE_STRING (int16 length, -1 = null)
//	v2: v1 + tagged fields (flexible requests)
//
// ClientID aliases the frame it was parsed from.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      []byte // nil when null or absent (v0)
	HeaderVersion int16
}

// flexibleSince[k] is the first flexible version of API key k, or -1 when the
// API is never flexible. Built once from kmsg, which generates it from
// Kafka's own message definitions.
var flexibleSince = func() [256]int16 {
	var table [256]int16
	for k := range table {
		table[k] = -1
		req := kmsg.RequestForKey(int16(k))
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				table[k] = v
				break
			}
		}
	}
	return table
}()

// IsFlexible reports whether (apiKey, apiVersion) uses the flexible
// encoding: compact strings and arrays and tagged fields.
func IsFlexible(apiKey, apiVersion int16) bool {
	if apiKey < 0 || int(apiKey) >= len(flexibleSince) {
		return false
	}
	since := flexibleSince[apiKey]
	return since >= 0 && apiVersion >= since
}

// RequestHeaderVersion is the request header version Kafka uses for the API:
// 2 for flexible versions, 1 otherwise. (ControlledShutdown v0 used header v0;
// the broker does not serve it.)
func RequestHeaderVersion(apiKey, apiVersion int16) int16 {
	if IsFlexible(apiKey, apiVersion) {
		return 2
	}
	return 1
}

// ResponseHeaderVersion is the response header version for the API: 1 (with
// tagged fields) for flexible versions, 0 otherwise — except ApiVersions,
// whose response header is always v0 so that clients can parse it before they
// know which versions the broker speaks.
func ResponseHeaderVersion(apiKey, apiVersion int16) int16 {
	if apiKey == 18 { // ApiVersions
		return 0
	}
	if IsFlexible(apiKey, apiVersion) {
		return 1
	}
	return 0
}

// ParseRequestHeader parses the header at the start of a request frame and
// returns it with the rest of the frame (the body). The header version is
// derived from the API key and version. It allocates nothing: ClientID and
// body alias frame.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	r := Reader{B: frame}
	h.APIKey = r.Int16()
	h.APIVersion = r.Int16()
	h.CorrelationID = r.Int32()
	if r.Err != nil {
		return h, nil, fmt.Errorf("request header: %w", ErrHeaderTruncated)
	}
	h.HeaderVersion = RequestHeaderVersion(h.APIKey, h.APIVersion)
	return parseRequestHeaderRest(h, r)
}

// ParseRequestHeaderVersion parses a request header of an explicit version
// (0, 1 or 2), for callers that know it.
func ParseRequestHeaderVersion(frame []byte, version int16) (RequestHeader, []byte, error) {
	var h RequestHeader
	r := Reader{B: frame}
	h.APIKey = r.Int16()
	h.APIVersion = r.Int16()
	h.CorrelationID = r.Int32()
	if r.Err != nil {
		return h, nil, fmt.Errorf("request header: %w", ErrHeaderTruncated)
	}
	h.HeaderVersion = version
	return parseRequestHeaderRest(h, r)
}

func parseRequestHeaderRest(h RequestHeader, r Reader) (RequestHeader, []byte, error) {
	if h.HeaderVersion >= 1 {
		h.ClientID = r.NullableString()
	}
	if h.HeaderVersion >= 2 {
		r.SkipTaggedFields()
	}
	if r.Err != nil {
		return h, nil, fmt.Errorf("request header v%d: %w", h.HeaderVersion, r.Err)
	}
	return h, r.B, nil
}

// AppendRequestHeader appends a request header of h.HeaderVersion to b.
func AppendRequestHeader(b []byte, h RequestHeader) []byte {
	b = AppendInt16(b, h.APIKey)
	b = AppendInt16(b, h.APIVersion)
	b = AppendInt32(b, h.CorrelationID)
	if h.HeaderVersion >= 1 {
		b = AppendNullableString(b, h.ClientID)
	}
	if h.HeaderVersion >= 2 {
		b = AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

// AppendResponseHeader appends a response header: the correlation id, and
// for v1 an empty tagged-field section.
func AppendResponseHeader(b []byte, correlationID int32, version int16) []byte {
	b = AppendInt32(b, correlationID)
	if version >= 1 {
		b = AppendUvarint(b, 0)
	}
	return b
}

// ParseResponseHeader parses a response header of the given version and
// returns the correlation id and the body.
func ParseResponseHeader(frame []byte, version int16) (int32, []byte, error) {
	r := Reader{B: frame}
	id := r.Int32()
	if version >= 1 {
		r.SkipTaggedFields()
	}
	if r.Err != nil {
		return 0, nil, fmt.Errorf("response header v%d: %w", version, r.Err)
	}
	return id, r.B, nil
}
