package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/broker/storage"
)

// sendfileBytes counts record bytes sent from segment files to sockets
// with sendfile(2), so tests can prove fetched records never went through
// user space.
var sendfileBytes atomic.Int64

// copiedRegionBytes counts region bytes sent by copying through user
// space instead: every fetched byte on a TLS connection (copyTo), and
// logs not on the OS file system (tests only).
var copiedRegionBytes atomic.Int64

// fetchResponse is an encoded Fetch response: a buffer with every field
// but the records, and the file regions to splice in.
type fetchResponse struct {
	buffer *bytebufferpool.ByteBuffer
	// pieces alternate between buffer ranges and file regions, in wire order.
	pieces []fetchPiece
	// reads hold the segment files open until the response is sent.
	reads []storage.ReadResult
}

// fetchPiece is either buffer[start:end] or a file region.
type fetchPiece struct {
	start, end int
	region     storage.Region
	isRegion   bool
}

func (f *fetchResponse) release() {
	for i := range f.reads {
		f.reads[i].Release()
	}
	f.reads = nil
	if f.buffer != nil {
		bytebufferpool.Put(f.buffer)
		f.buffer = nil
	}
}

// writeTo sends the response on the connection (writer goroutine only).
// TCP_CORK holds the small buffer pieces back so they leave in full
// packets with the file data. On a plain TCP connection the file regions
// go out with sendfile(2), never entering user space. On a TLS connection
// that is impossible (the kernel would send the bytes unencrypted; kTLS
// is not used), so copyTo reads them through user space.
func (f *fetchResponse) writeTo(c *connection) error {
	if c.socket != nil {
		setCork(c.socket, true)
		defer setCork(c.socket, false)
	}
	if c.rawConn == nil {
		return f.copyTo(c.netConn)
	}
	for _, piece := range f.pieces {
		if !piece.isRegion {
			if piece.end > piece.start {
				if _, err := c.netConn.Write(f.buffer.B[piece.start:piece.end]); err != nil {
					return err
				}
			}
			continue
		}
		var err error
		if piece.region.File != nil {
			err = sendRegion(c.rawConn, piece.region)
		} else {
			err = copyRegion(c.netConn, piece.region)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyBufferBytes is the size of the pooled buffer copyTo sends through:
// eight full TLS records per write, one pread(2) per 128 KiB of file.
const copyBufferBytes = 128 << 10

// copiers pools the buffered writers of copyTo, so a fetch over TLS
// allocates nothing for its bytes, however large its regions.
var copiers = sync.Pool{New: func() any {
	return &regionCopier{writer: bufio.NewWriterSize(nil, copyBufferBytes)}
}}

// regionCopier is a pooled buffer with a reader of one region at a time.
type regionCopier struct {
	writer *bufio.Writer
	region regionReader
}

// copyTo is writeTo without sendfile: the response's fields and its file
// regions go through one pooled buffer (copyBufferBytes), the regions
// read from the file straight into it (bufio.Writer.ReadFrom: one
// pread per buffer, no intermediate copy), so w — a tls.Conn — gets few,
// large writes and seals full records. Every region byte is counted in
// copiedRegionBytes.
func (f *fetchResponse) copyTo(w io.Writer) error {
	copier := copiers.Get().(*regionCopier)
	copier.writer.Reset(w)
	defer func() {
		copier.writer.Reset(nil)
		copier.region = regionReader{}
		copiers.Put(copier)
	}()
	for _, piece := range f.pieces {
		if !piece.isRegion {
			if _, err := copier.writer.Write(f.buffer.B[piece.start:piece.end]); err != nil {
				return err
			}
			continue
		}
		copier.region = regionReader{region: piece.region}
		n, err := copier.writer.ReadFrom(&copier.region)
		copiedRegionBytes.Add(n)
		if err != nil {
			return err
		}
		if n < piece.region.Size {
			return errShortFile
		}
	}
	return copier.writer.Flush()
}

// regionReader reads a region from its start (io.SectionReader without
// an allocation per region).
type regionReader struct {
	region storage.Region
	offset int64
}

func (r *regionReader) Read(p []byte) (int, error) {
	if r.offset >= r.region.Size {
		return 0, io.EOF
	}
	n, err := r.region.ReadAt(p, r.offset)
	r.offset += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil // the next Read says EOF
	}
	return n, err
}

func setCork(raw syscall.RawConn, on bool) {
	value := 0
	if on {
		value = 1
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, value)
	})
}

// errShortFile means a segment file ended inside a region being sent.
var errShortFile = errors.New("segment file shorter than the region being sent")

// sendRegion sends a file region to the socket with sendfile(2) at an
// explicit file offset, so concurrent fetches of one file never share a
// file position. The socket is non-blocking: on EAGAIN RawConn.Write waits
// for it to become writable and calls the function again.
func sendRegion(socket syscall.RawConn, region storage.Region) error {
	fileConn, err := region.File.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	offset, remaining := region.Position, region.Size
	var sendErr error
	controlErr := fileConn.Control(func(fileFD uintptr) {
		writeErr := socket.Write(func(socketFD uintptr) bool {
			for remaining > 0 {
				chunk := int(min(remaining, 1<<30))
				n, err := syscall.Sendfile(int(socketFD), int(fileFD), &offset, chunk)
				if n > 0 {
					remaining -= int64(n)
					sendfileBytes.Add(int64(n))
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
					continue
				case err != nil:
					sendErr = fmt.Errorf("sendfile: %w", err)
					return true
				case n == 0:
					sendErr = errShortFile
					return true
				}
			}
			return true
		})
		if sendErr == nil && writeErr != nil {
			sendErr = writeErr
		}
	})
	if sendErr != nil {
		return sendErr
	}
	return controlErr
}

// copyRegion is the fallback of a plain TCP connection for logs not on
// the OS file system (tests only): it reads through user space.
func copyRegion(w io.Writer, region storage.Region) error {
	n, err := io.Copy(w, io.NewSectionReader(region, 0, region.Size))
	copiedRegionBytes.Add(n)
	if err == nil && n < region.Size {
		err = errShortFile
	}
	return err
}
