package loadgen

import (
	"context"
	"fmt"
	"os"

	"github.com/exactly-eos/exactly/broker"
)

// embeddedTarget is our own broker, started in this process on a loopback
// port with its log in a temporary directory.
type embeddedTarget struct {
	broker  *broker.Broker
	dataDir string
	owned   bool // dataDir was created here and is removed on Close
}

// startEmbedded starts the broker. An empty dataDir means a fresh temporary
// directory, removed on Close.
func startEmbedded(ctx context.Context, dataDir string) (Target, error) {
	return startEmbeddedWith(ctx, dataDir, nil)
}

// startEmbeddedWith starts the broker with server.properties settings
// (tests set group.initial.rebalance.delay.ms=0, so consume stages do not
// wait for Kafka's initial rebalance delay before each run).
func startEmbeddedWith(ctx context.Context, dataDir string, properties map[string]string) (Target, error) {
	owned := dataDir == ""
	if owned {
		dir, err := os.MkdirTemp("", "exactly-loadgen-*")
		if err != nil {
			return nil, fmt.Errorf("embedded broker data directory: %w", err)
		}
		dataDir = dir
	}
	b, err := broker.Start(ctx, broker.Config{Listen: "127.0.0.1:0", DataDir: dataDir, Properties: properties})
	if err != nil {
		if owned {
			os.RemoveAll(dataDir)
		}
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	return &embeddedTarget{broker: b, dataDir: dataDir, owned: owned}, nil
}

func (t *embeddedTarget) Kind() string        { return TargetEmbedded }
func (t *embeddedTarget) Bootstrap() []string { return []string{t.broker.Addr()} }
func (t *embeddedTarget) Description() string {
	return "exactly broker, embedded in process, " + t.broker.Addr() + ", data in " + t.dataDir
}

func (t *embeddedTarget) Close() error {
	err := t.broker.Close()
	if t.owned {
		if removeErr := os.RemoveAll(t.dataDir); removeErr != nil && err == nil {
			err = removeErr
		}
	}
	return err
}
