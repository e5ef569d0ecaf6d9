package bench

// Servers under benchmark run in a subprocess: the test binary re-executed
// with EXACTLY_BENCH_SERVER set. The child's init hook (serveIfChild)
// starts the server, prints "listening <host:port>" on stdout, serves until
// its stdin reaches EOF (the parent closed it, or died), shuts the server
// down and exits, before the testing package runs anything. The parent
// reads the child's CPU time and memory from /proc/<pid>.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/exactly-eos/exactly/broker/clusternode"
)

// Server kinds a subprocess can host.
const (
	serverExactly = "exactly" // a single broker as users run it: a cluster of one over a data directory
	serverKfake   = "kfake"   // kfake, everything in memory
	serverCeiling = "ceiling" // kfake with BlackholeProduce: acks and discards
	serverNull    = "null"    // nullServer: reads frames, answers from batch headers
)

// Environment of a server subprocess.
const (
	serverKindEnv    = "EXACTLY_BENCH_SERVER"     // one of the server kinds
	serverDataDirEnv = "EXACTLY_BENCH_DATA_DIR"   // exactly's data directory
	serverProfileEnv = "EXACTLY_BENCH_CPUPROFILE" // optional CPU profile path
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// fixed at 100 by the Linux ABI on every architecture Go supports).
const userHZ = 100

func init() {
	if kind := os.Getenv(serverKindEnv); kind != "" {
		if err := serveChild(kind); err != nil {
			fmt.Fprintf(os.Stderr, "bench server %s: %v\n", kind, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serveChild hosts one server until stdin reaches EOF.
func serveChild(kind string) error {
	if path := os.Getenv(serverProfileEnv); path != "" {
		file, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(file); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			file.Close()
		}()
	}
	var addr string
	var shutdown func() error
	switch kind {
	case serverExactly:
		m, err := startSingleBroker(os.Getenv(serverDataDirEnv))
		if err != nil {
			return err
		}
		addr, shutdown = m.Addr(), m.Close
	case serverNull:
		null, err := startNullServer()
		if err != nil {
			return err
		}
		addr, shutdown = null.addr(), null.close
	case serverKfake, serverCeiling:
		options := []kfake.Opt{kfake.NumBrokers(1)}
		if kind == serverCeiling {
			options = append(options, kfake.BlackholeProduce())
		}
		cluster, err := kfake.NewCluster(options...)
		if err != nil {
			return err
		}
		addr = cluster.ListenAddrs()[0]
		shutdown = func() error { cluster.Close(); return nil }
	default:
		return fmt.Errorf("unknown server kind %q", kind)
	}
	fmt.Printf("listening %s\n", addr)
	io.Copy(io.Discard, os.Stdin) // returns at EOF: the parent is done
	return shutdown()
}

// startSingleBroker starts one exactly broker as `exactly broker` runs it
// without a quorum: a cluster of one (clusternode with no voters, its
// metadata quorum in process), on a loopback port, logs discarded.
func startSingleBroker(dataDir string) (*clusternode.Member, error) {
	return clusternode.Start(clusternode.Config{Listen: "127.0.0.1:0", DataDir: dataDir})
}

// serverProcess is a server subprocess seen from the parent. Its methods
// are called from the benchmark's goroutine only.
type serverProcess struct {
	kind    string
	addr    string
	command *exec.Cmd
	stdin   io.WriteCloser
	drained chan struct{} // closed when the child's stdout reaches EOF
	stopped bool
}

// startServer starts a server subprocess of the given kind. dataDir is
// used by the exactly broker; profilePath, if not empty, receives the
// child's CPU profile when it stops.
func startServer(kind, dataDir, profilePath string) (*serverProcess, error) {
	command := exec.Command(os.Args[0], "-test.run=^$")
	command.Env = append(os.Environ(),
		serverKindEnv+"="+kind, serverDataDirEnv+"="+dataDir, serverProfileEnv+"="+profilePath)
	command.Stderr = os.Stderr
	stdin, err := command.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := command.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := command.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", kind, err)
	}
	server := &serverProcess{kind: kind, command: command, stdin: stdin, drained: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		// The first line is the address; the rest is drained so the
		// child never blocks writing to stdout.
		defer close(server.drained)
		reader := bufio.NewReader(stdout)
		line, _ := reader.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, reader)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			server.stop()
			return nil, fmt.Errorf("%s server printed %q, want its address", kind, line)
		}
		server.addr = addr
	case <-time.After(30 * time.Second):
		server.stop()
		return nil, fmt.Errorf("%s server printed no address within 30 s", kind)
	}
	return server, nil
}

// stop closes the child's stdin, which shuts it down, and waits for it to
// exit (killing it after 60 s).
func (s *serverProcess) stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	s.stdin.Close()
	// Wait must not run before the stdout reader is done; the child
	// closes stdout by exiting.
	killed := false
	select {
	case <-s.drained:
	case <-time.After(60 * time.Second):
		s.command.Process.Kill()
		killed = true
	}
	err := s.command.Wait()
	switch {
	case killed:
		return fmt.Errorf("%s server did not stop within 60 s; killed", s.kind)
	case err != nil:
		return fmt.Errorf("%s server exit: %w", s.kind, err)
	}
	return nil
}

// cpuSeconds returns the child's user+system CPU time so far.
func (s *serverProcess) cpuSeconds() (float64, error) {
	return processCPUSeconds(s.command.Process.Pid)
}

// memory returns the child's resident set size now and its peak, in bytes.
func (s *serverProcess) memory() (resident, peak int64, err error) {
	return processMemory(s.command.Process.Pid)
}

// processCPUSeconds reads utime+stime of a process (all its threads) from
// /proc/<pid>/stat.
func processCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPUSeconds(string(data))
}

// parseStatCPUSeconds extracts utime+stime (fields 14 and 15) from the text
// of /proc/<pid>/stat. The command name (field 2) is in parentheses and may
// hold spaces, so fields are counted after its closing parenthesis.
func parseStatCPUSeconds(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name", len(fields))
	}
	userTicks, err1 := strconv.ParseInt(fields[14-3], 10, 64)
	systemTicks, err2 := strconv.ParseInt(fields[15-3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return float64(userTicks+systemTicks) / userHZ, nil
}

// processMemory reads VmRSS and VmHWM of a process from /proc/<pid>/status.
func processMemory(pid int) (resident, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatusMemory(string(data))
}

// parseStatusMemory extracts VmRSS and VmHWM ("VmRSS:    1234 kB") from
// the text of /proc/<pid>/status, in bytes.
func parseStatusMemory(status string) (resident, peak int64, err error) {
	found := 0
	for line := range strings.Lines(status) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kilobytes, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc status %s: %w", name, err)
		}
		if name == "VmRSS" {
			resident = kilobytes * 1024
		} else {
			peak = kilobytes * 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("/proc status: VmRSS or VmHWM missing")
	}
	return resident, peak, nil
}
