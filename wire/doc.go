// Package wire is exactly's codec for the Kafka protocol: framing, request
// and response headers, the Produce request walked as a view, record batch
// v2 (view, validation, record iteration, decompression, builder) and
// transaction control records.
//
// Everything on the hot path is a view: parsing returns slices that alias
// the caller's buffer and allocates nothing, so a Produce request can be
// read, validated and appended to the log without copying a record. Views
// are valid only while the bytes they wrap are; none is safe for concurrent
// mutation, but read-only views may be shared.
//
// Malformed input is reported as an error wrapping one of the package's
// sentinel errors (ErrShortBuffer, ErrProduceMalformed, ErrBatchTruncated,
// ErrBatchCRC, ErrRecordMalformed, ...). Nothing panics on input bytes; the
// fuzz targets in this package check that.
//
// # Frame
//
// Every request and response is one frame:
//
//	size     int32   bytes that follow (0 ≤ size ≤ FrameReader.MaxSize)
//	payload  size bytes: header, then body
//
// # Request header
//
//	api_key         int16
//	api_version     int16
//	correlation_id  int32
//	client_id       int16 length + bytes, -1 = null     (v1, v2)
//	tagged fields   uvarint count, then per field        (v2 only)
//	                uvarint tag, uvarint size, bytes
//
// Header v2 is used by flexible API versions, v1 otherwise (v0 only by
// ControlledShutdown v0). The client id stays a classic nullable string
// even in v2, so that a broker can read it before knowing the version.
//
// # Response header
//
//	correlation_id  int32
//	tagged fields   (v1 only)
//
// v1 is used by flexible versions, except ApiVersions, whose response header
// is always v0.
//
// # Flexible encoding
//
// Flexible versions replace int16/int32 lengths with a uvarint of length+1
// (0 = null) for strings, bytes and arrays, and end every structure with a
// tagged-field section. Varints in records are zig-zag encoded (varint for
// 32 bits, varlong for 64); lengths in flexible messages are unsigned.
//
// # Produce request (v3..v13)
//
//	transactional_id  nullable string            (compact from v9)
//	acks              int16
//	timeout_ms        int32
//	topics            array                      (compact from v9)
//	  name            string (v3..v12)  |  topic_id 16-byte UUID (v13+)
//	  partitions      array
//	    index         int32
//	    records       nullable bytes: concatenated record batches
//	    tagged fields (v9+)
//	  tagged fields   (v9+)
//	tagged fields     (v9+)
//
// ParseProduceRequest reads the head; ProduceTopicIterator and
// ProducePartitionIterator walk the rest; BatchIterator (or ForEachBatch)
// splits a records field into batches.
//
// # Record batch v2
//
//	offset  size  field
//	     0     8  base offset            (not covered by the CRC)
//	     8     4  batch length           = total size - 12
//	    12     4  partition leader epoch (not covered by the CRC)
//	    16     1  magic = 2
//	    17     4  CRC-32C (Castagnoli) of bytes [21, end)
//	    21     2  attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy,
//	              3 lz4, 4 zstd), bit 3 LogAppendTime, bit 4 transactional,
//	              bit 5 control
//	    23     4  last offset delta
//	    27     8  base timestamp (ms)
//	    35     8  max timestamp (ms)
//	    43     8  producer id      (-1 without idempotence)
//	    51     2  producer epoch   (-1 without idempotence)
//	    53     4  base sequence    (-1 without idempotence)
//	    57     4  record count
//	    61     …  records, compressed as a whole when the codec is not none
//
// Because the CRC starts at the attributes, the broker rewrites base offset
// and partition leader epoch in place (BatchView.SetBaseOffset,
// SetPartitionLeaderEpoch) and appends the producer's bytes unchanged.
//
// # Record
//
//	length          varint   size of the rest of the record
//	attributes      int8     unused
//	timestamp delta varlong  from the base timestamp
//	offset delta    varint   from the base offset
//	key             varint length (-1 = null), bytes
//	value           varint length (-1 = null), bytes
//	header count    varint
//	headers         key: varint length (never null), bytes;
//	                value: varint length (-1 = null), bytes
//
// For LogAppendTime batches every record's timestamp is the batch's max
// timestamp.
//
// # Compression
//
// The records section after the header is compressed as one stream: gzip;
// snappy either as one raw block or in xerial framing (8-byte magic
// 0x82 "SNAPPY" 0x00, int32 version 1, int32 compatible version 1, then
// blocks of int32 length + raw snappy block), which Java clients and kgo
// write; lz4 frame format; zstd frames. Decompressor bounds the output
// (DefaultMaxDecompressedSize unless set) so a compression bomb costs at
// most the limit.
//
// # Control records
//
// A transaction marker is a batch with the transactional and control
// attributes holding one record whose key and value are fixed big-endian
// structures:
//
//	key    version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
//	value  version int16 (0), coordinator epoch int32
package wire
