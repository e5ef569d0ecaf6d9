package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics (the Prometheus text format of m's registry),
// /healthz (200 while the process runs) and /readyz (200 once ready
// reports true — logs recovered and coordinators loaded — 503 before).
func Handler(m *Broker, ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready == nil || !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Server is a running metrics HTTP server.
type Server struct {
	listener net.Listener
	server   *http.Server
	done     chan struct{}
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// Handler(m, ready) until Close.
func Serve(addr string, m *Broker, ready func() bool) (*Server, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	s := &Server{listener: listener, done: make(chan struct{}),
		server: &http.Server{Handler: Handler(m, ready), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		s.server.Serve(listener)
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the /metrics URL of the server.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close stops the server, waiting briefly for scrapes under way.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.server.Shutdown(ctx)
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
