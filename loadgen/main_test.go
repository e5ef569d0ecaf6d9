package loadgen

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/exactly-eos/exactly/broker/clusternode"
)

// selfEnv turns the re-executed test binary into the `exactly` binary's
// broker and loadgen-worker subcommands, which process and client faults
// launch.
const selfEnv = "EXACTLY_LOADGEN_TEST_SELF"

func TestMain(m *testing.M) {
	if os.Getenv(selfEnv) != "" {
		os.Exit(runSelf(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// testSelf is the SelfCommand of tests: this test binary in self mode.
func testSelf() SelfCommand {
	return SelfCommand{Path: os.Args[0], Env: []string{selfEnv + "=1"}}
}

// runSelf serves `broker --listen A --data-dir D --node-id N` and
// `loadgen worker --spec JSON`.
func runSelf(args []string) int {
	switch {
	case len(args) >= 2 && args[0] == "loadgen" && args[1] == "worker":
		if err := RunWorker(args[2:], os.Stdin, os.Stdout); err != nil {
			return 1
		}
		return 0
	case len(args) >= 1 && args[0] == "broker":
		flags := flag.NewFlagSet("broker", flag.ContinueOnError)
		listen := flags.String("listen", "", "")
		dataDir := flags.String("data-dir", "", "")
		nodeID := flags.Int("node-id", 0, "")
		if err := flags.Parse(args[1:]); err != nil {
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		// As `exactly broker` runs without a quorum: a cluster of one.
		b, err := clusternode.Start(clusternode.Config{NodeID: int32(*nodeID), Listen: *listen, DataDir: *dataDir})
		if err != nil {
			fmt.Fprintln(os.Stderr, "broker:", err)
			return 1
		}
		<-ctx.Done()
		b.Close()
		return 0
	}
	fmt.Fprintf(os.Stderr, "self mode: unknown arguments %v\n", args)
	return 2
}
