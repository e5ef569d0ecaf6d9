package broker

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"

	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/broker/storage"
)

// sendfileBytes counts record bytes sent from segment files to sockets
// with sendfile(2), so tests can prove fetched records never went through
// user space.
var sendfileBytes atomic.Int64

// copiedRegionBytes counts region bytes sent by copying instead (only for
// connections that are not TCP sockets).
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
// packets with the file data.
func (f *fetchResponse) writeTo(c *connection) error {
	if c.rawConn != nil {
		setCork(c.rawConn, true)
		defer setCork(c.rawConn, false)
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
		if c.rawConn != nil && piece.region.File != nil {
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

// copyRegion is the fallback for connections without a raw socket and
// for logs not on the OS file system (tests only): it reads through user
// space.
func copyRegion(w io.Writer, region storage.Region) error {
	n, err := io.Copy(w, io.NewSectionReader(region, 0, region.Size))
	copiedRegionBytes.Add(n)
	if err == nil && n < region.Size {
		err = errShortFile
	}
	return err
}
