package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/loadgen"
)

// embeddedTarget is our own broker, started in this process on a loopback
// port with its log in a temporary directory: loadgen's "embedded" target.
// It runs as `exactly broker` does without a quorum: a cluster of one
// (clusternode with no voters listed, its metadata quorum in process).
// It lives here, not in package loadgen, so that the load generator does
// not link the broker; the suite spec hands startEmbedded to
// loadgen.StartTarget.
type embeddedTarget struct {
	member  *clusternode.Member
	metrics *brokerMetrics
	dataDir string
	owned   bool          // dataDir was created here and is removed on Close
	stopped chan struct{} // closed by Close: the watch of the start context ends
}

// startEmbedded starts the broker. An empty dataDir means a fresh temporary
// directory, removed on Close.
func startEmbedded(ctx context.Context, dataDir string) (loadgen.Target, error) {
	target, err := startEmbeddedWith(ctx, dataDir, nil)
	if err != nil {
		return nil, err // not a nil *embeddedTarget in a non-nil Target
	}
	return target, nil
}

// embeddedFor is startEmbedded with broker settings (those a workload
// needs: loadgen.LaunchedBrokerProperties, the consumer protocol's
// session of consumer-crash's workers).
func embeddedFor(properties map[string]string) func(ctx context.Context, dataDir string) (loadgen.Target, error) {
	if properties == nil {
		return startEmbedded
	}
	return func(ctx context.Context, dataDir string) (loadgen.Target, error) {
		target, err := startEmbeddedWith(ctx, dataDir, func(config *clusternode.Config) { config.Properties = properties })
		if err != nil {
			return nil, err // not a nil *embeddedTarget in a non-nil Target
		}
		return target, nil
	}
}

// startEmbeddedWith is startEmbedded with configure (if not nil) applied
// to the member's Config before it starts. The broker stops when ctx ends
// or on Close.
func startEmbeddedWith(ctx context.Context, dataDir string, configure func(*clusternode.Config)) (*embeddedTarget, error) {
	owned := dataDir == ""
	if owned {
		dir, err := os.MkdirTemp("", "exactly-loadgen-*")
		if err != nil {
			return nil, fmt.Errorf("embedded broker data directory: %w", err)
		}
		dataDir = dir
	}
	// The broker's metrics are served on a free loopback port, so the
	// loadgen can scrape them before and after each cell (MetricsURL).
	served, err := startBrokerMetrics("127.0.0.1:0")
	if err != nil {
		if owned {
			os.RemoveAll(dataDir)
		}
		return nil, fmt.Errorf("embedded broker metrics: %w", err)
	}
	config := clusternode.Config{Listen: "127.0.0.1:0", DataDir: dataDir, Metrics: served.collectors()}
	if configure != nil {
		configure(&config)
	}
	m, err := clusternode.Start(config)
	if err != nil {
		served.close()
		if owned {
			os.RemoveAll(dataDir)
		}
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	served.setReady(m.Broker().Ready)
	target := &embeddedTarget{member: m, metrics: served, dataDir: dataDir, owned: owned}
	stopped := make(chan struct{})
	target.stopped = stopped
	go func() {
		select {
		case <-ctx.Done():
			m.Close()
		case <-stopped:
		}
	}()
	return target, nil
}

// MetricsURL is the embedded broker's /metrics URL (http://127.0.0.1:port/metrics).
func (t *embeddedTarget) MetricsURL() string { return t.metrics.url() }

func (t *embeddedTarget) Kind() string        { return loadgen.TargetEmbedded }
func (t *embeddedTarget) Bootstrap() []string { return []string{t.member.Addr()} }
func (t *embeddedTarget) Description() string {
	return "exactly broker, embedded in process, " + t.member.Addr() + ", data in " + t.dataDir
}

func (t *embeddedTarget) Close() error {
	close(t.stopped)
	err := errors.Join(t.member.Close(), t.metrics.close())
	if t.owned {
		if removeErr := os.RemoveAll(t.dataDir); removeErr != nil && err == nil {
			err = removeErr
		}
	}
	return err
}
