package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/api"
)

// serveAPI runs package api's handler of req's API for connection c, as
// the connection does after decoding (tests call it with a request built
// in memory at the version they set).
func serveAPI(ctx context.Context, c *connection, req kmsg.Request) kmsg.Response {
	for _, h := range api.Handlers() {
		if h.Key == req.Key() {
			return h.Serve(ctx, c.apiRequest(), req)
		}
	}
	panic("serveAPI: no api handler for key " + kmsg.NameForKey(req.Key()))
}

// TestAPIHandlersRegistered holds every handler of package api to being
// served by the broker, over the versions it declares.
func TestAPIHandlersRegistered(t *testing.T) {
	t.Parallel()
	for _, h := range api.Handlers() {
		got, ok := handlers[h.Key]
		if !ok {
			t.Errorf("%s: in package api, not registered by the broker", kmsg.NameForKey(h.Key))
			continue
		}
		if got.minVersion != h.MinVersion || got.maxVersion != h.MaxVersion {
			t.Errorf("%s: broker serves v%d-%d, api declares v%d-%d", kmsg.NameForKey(h.Key), got.minVersion, got.maxVersion, h.MinVersion, h.MaxVersion)
		}
	}
}
