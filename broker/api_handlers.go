package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/api"
)

// The handlers of package api are registered here, each through
// kmsgAdapter: the connection decodes the request, the handler answers it
// seeing only the connection's api.Request, and the connection encodes the
// answer at the request's version.
func init() {
	for _, h := range api.Handlers() {
		register(h.Key, h.MinVersion, h.MaxVersion, kmsgAdapter(handling(h.Where), func(ctx context.Context, c *connection, req kmsg.Request) kmsg.Response {
			return h.Serve(ctx, c.apiRequest(), req)
		}))
	}
}

// apiRequest is what package api's handlers see of this connection: its
// authorization, its listener, its logger and the broker's services. The
// accept loop builds it before the connection's goroutines start (tests'
// connections build it on first use, in the goroutine that serves them);
// it is not changed afterwards.
func (c *connection) apiRequest() *api.Request {
	if c.api.Services == nil {
		c.api = api.Request{Auth: c, Logger: c.logger, Services: c.broker.apiServices()}
		if c.ctx != nil { // tests' connections have no context
			c.api.Closed = c.ctx.Done()
		}
		if c.listener != nil {
			c.api.Listener = c.listener.name
		}
	}
	return &c.api
}

// apiServices is the broker's api.Services, built once.
func (b *Broker) apiServices() *api.Services {
	b.servicesOnce.Do(func() {
		b.services = &api.Services{
			Groups:       groupService{b},
			Transactions: transactionService{b},
			Topics:       topicService{b},
			Cluster:      clusterService{b},
			Admin:        adminService{b},
			ACLs:         aclService{b},
			Credentials:  credentialService{b},
			Shares:       shareService{b},
			Metrics:      b.metrics,
		}
	})
	return b.services
}
