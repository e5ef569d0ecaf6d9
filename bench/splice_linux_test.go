//go:build linux

package bench

import (
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkReceiveToFile measures, for issue 37's one-copy question, what
// the receiving side of a produce costs per byte on this machine when the
// bytes go from a loopback TCP socket into a file, three ways:
//
//   - copy: read(2) into a user buffer, CRC-32C over it, pwrite(2) into the
//     file (the broker's path today: two kernel copies and the CRC);
//   - splice: splice(2) socket → pipe → file, then CRC-32C over the bytes
//     in the page cache through a read-only mmap (one kernel copy; the CRC
//     reads what the copy left in the cache);
//   - splice-nocrc: the splices alone (what the one copy costs);
//   - direct: read(2) into an aligned user buffer, CRC-32C over it, and
//     pwrite(2) to a file opened O_DIRECT (the write leaves the page cache
//     out: one kernel copy, the device's DMA does the rest; skipped where
//     the file system refuses O_DIRECT, tmpfs for one).
//
// One op is one 1 MiB chunk (the size of a produce batch at the limit).
// The sender is another goroutine of this process writing the same bytes
// every time; receive-ms/GB is the receiving goroutine's CPU time per GB
// (RUSAGE_THREAD around each chunk, the goroutine locked to its thread),
// the number to compare. The file wraps at 256 MiB so the page cache
// holds it. Interleave the variants with -count and compare medians; run
// on a quiet machine:
//
//	go test -run '^$' -bench ReceiveToFile -benchtime 2000x -count 5 ./bench/
func BenchmarkReceiveToFile(b *testing.B) {
	for _, way := range []string{"copy", "direct", "splice", "splice-nocrc"} {
		b.Run("way="+way, func(b *testing.B) { benchmarkReceive(b, way) })
	}
}

const (
	receiveChunk   = 1 << 20
	receiveFileCap = 256 << 20
)

func benchmarkReceive(b *testing.B, way string) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer listener.Close()
	payload := make([]byte, receiveChunk)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	want := crc32.Checksum(payload, castagnoli)
	sendErr := make(chan error, 1)
	go func() {
		conn, err := net.Dial("tcp", listener.Addr().String())
		if err != nil {
			sendErr <- err
			return
		}
		defer conn.Close()
		for i := 0; i < b.N; i++ {
			if _, err := conn.Write(payload); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	conn, err := listener.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	file, err := os.OpenFile(filepath.Join(b.TempDir(), "segment"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	if err := file.Truncate(receiveFileCap); err != nil {
		b.Fatal(err)
	}
	if way == "direct" {
		direct, err := os.OpenFile(filepath.Join(b.TempDir(), "direct"), os.O_CREATE|os.O_RDWR|syscall.O_DIRECT, 0o644)
		if err != nil {
			b.Skipf("O_DIRECT: %v", err)
		}
		defer direct.Close()
		file = direct
	}
	mapped, err := syscall.Mmap(int(file.Fd()), 0, receiveFileCap, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Munmap(mapped)
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(pipe[0])
	defer syscall.Close(pipe[1])
	// A 1 MiB pipe moves a chunk in one pair of splices where the
	// system allows it (fs.pipe-max-size); the loop copes with less.
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(pipe[1]), syscall.F_SETPIPE_SZ, receiveChunk)
	// Aligned to 4 KiB, as O_DIRECT wants.
	buffer := alignedBuffer(receiveChunk)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	b.SetBytes(receiveChunk)
	b.ResetTimer()
	var offset int64
	for i := 0; i < b.N; i++ {
		if offset+receiveChunk > receiveFileCap {
			offset = 0
		}
		before := threadCPU()
		var got uint32
		switch way {
		case "copy", "direct":
			if _, err := io.ReadFull(conn, buffer); err != nil {
				b.Fatal(err)
			}
			got = crc32.Checksum(buffer, castagnoli)
			if _, err := file.WriteAt(buffer, offset); err != nil {
				b.Fatal(err)
			}
		default:
			if err := spliceChunk(raw, pipe, int(file.Fd()), offset); err != nil {
				b.Fatal(err)
			}
			if way == "splice" {
				got = crc32.Checksum(mapped[offset:offset+receiveChunk], castagnoli)
			} else {
				got = want
			}
		}
		cpu += threadCPU() - before
		if got != want {
			b.Fatalf("chunk %d: crc %08x, want %08x", i, got, want)
		}
		offset += receiveChunk
	}
	b.StopTimer()
	if err := <-sendErr; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Milliseconds())/(float64(b.N)*receiveChunk/1e9), "receive-ms/GB")
}

// spliceChunk moves receiveChunk bytes from the socket into file at
// offset through the pipe, waiting for the socket as the runtime's poller
// says (SyscallConn.Read).
func spliceChunk(raw syscall.RawConn, pipe [2]int, fd int, offset int64) error {
	left := receiveChunk
	for left > 0 {
		var moved int64
		var spliceErr error
		err := raw.Read(func(socket uintptr) bool {
			moved, spliceErr = syscall.Splice(int(socket), nil, pipe[1], nil, left, spliceMove|spliceNonblock)
			return spliceErr != syscall.EAGAIN
		})
		if err != nil {
			return err
		}
		if spliceErr != nil {
			return fmt.Errorf("splice from the socket: %w", spliceErr)
		}
		if moved == 0 {
			return io.ErrUnexpectedEOF
		}
		for pending := moved; pending > 0; {
			written, err := syscall.Splice(pipe[0], nil, fd, &offset, int(pending), spliceMove)
			if err != nil {
				return fmt.Errorf("splice into the file: %w", err)
			}
			pending -= written
		}
		left -= int(moved)
	}
	return nil
}

const (
	spliceMove     = 0x1 // SPLICE_F_MOVE
	spliceNonblock = 0x2 // SPLICE_F_NONBLOCK
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// threadCPU is the calling thread's CPU time (user + system).
func threadCPU() time.Duration {
	var usage syscall.Rusage
	const rusageThread = 1
	if err := syscall.Getrusage(rusageThread, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// alignedBuffer returns n bytes starting at a 4 KiB boundary.
func alignedBuffer(n int) []byte {
	const align = 4096
	raw := make([]byte, n+align)
	start := align - int(uintptr(unsafe.Pointer(&raw[0]))%align)
	if start == align {
		start = 0
	}
	return raw[start : start+n]
}
