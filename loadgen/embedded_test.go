package loadgen

import (
	"context"
	"fmt"

	"github.com/exactly-eos/exactly/broker/clusternode"
)

// testEmbedded is our broker in the test process: the tests' embedded
// target (the exactly command's own lives in cmd/exactly, which the
// package loadgen does not import).
type testEmbedded struct {
	member  *clusternode.Member
	dataDir string
}

// startEmbeddedWith starts the broker, as `exactly broker` runs it (a
// cluster of one), with its log in dataDir (the tests
// give a t.TempDir()) and server.properties settings (some tests set
// group.initial.rebalance.delay.ms=0, so consume stages do not wait for
// Kafka's initial rebalance delay before each run).
func startEmbeddedWith(ctx context.Context, dataDir string, properties map[string]string) (Target, error) {
	m, err := clusternode.Start(clusternode.Config{Listen: "127.0.0.1:0", DataDir: dataDir, Properties: properties})
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	context.AfterFunc(ctx, func() { m.Close() })
	return &testEmbedded{member: m, dataDir: dataDir}, nil
}

func (t *testEmbedded) Kind() string        { return TargetEmbedded }
func (t *testEmbedded) Bootstrap() []string { return []string{t.member.Addr()} }
func (t *testEmbedded) Description() string {
	return "exactly broker, embedded in the test process, " + t.member.Addr() + ", data in " + t.dataDir
}
func (t *testEmbedded) Close() error { return t.member.Close() }
