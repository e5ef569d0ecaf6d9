package api

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handling says where the broker runs a handler.
type Handling bool

const (
	// InReader runs the handler in the connection's reader goroutine: it
	// answers without waiting on anything another request does.
	InReader Handling = false
	// Parks runs the handler on its own goroutine: it blocks until
	// something else happens (a rebalance step, a transaction's markers),
	// and the connection goes on reading meanwhile. Responses still leave
	// in request order.
	Parks Handling = true
)

// Handler is one registered API: its key, the versions served, where it
// runs, and Serve, which answers a decoded request (a kmsg request of the
// API's type at a version in range) with a response of the same API. ctx
// carries the client's id and host (group.WithClientInfo) and ends when
// the connection dies or the broker closes.
type Handler struct {
	Key, MinVersion, MaxVersion int16
	Where                       Handling
	Serve                       func(ctx context.Context, r *Request, req kmsg.Request) kmsg.Response
}

// handlers is filled by register from each handler file's init function;
// read-only afterwards.
var handlers = map[int16]Handler{}

// register adds the handler of API key for versions min..max; each handler
// file registers its API once, from init.
func register[R kmsg.Request](key, minVersion, maxVersion int16, where Handling, serve func(ctx context.Context, r *Request, req R) kmsg.Response) {
	if _, dup := handlers[key]; dup {
		panic(fmt.Sprintf("api: API key %d registered twice", key))
	}
	handlers[key] = Handler{
		Key: key, MinVersion: minVersion, MaxVersion: maxVersion, Where: where,
		Serve: func(ctx context.Context, r *Request, req kmsg.Request) kmsg.Response {
			return serve(ctx, r, req.(R)) // the broker decodes with kmsg.RequestForKey(key): always an R
		},
	}
}

// Handlers returns the registered handlers, by API key.
func Handlers() []Handler {
	out := make([]Handler, 0, len(handlers))
	for _, h := range handlers {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b Handler) int { return cmp.Compare(a.Key, b.Key) })
	return out
}
