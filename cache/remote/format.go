package remote

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/cache"
)

// Keys in Redis. Every key is a single key (no multi-key commands), so a
// cluster may hold them in any slot.
//
//	ptojit:2:e:<key hex>        an entry (cache.EncodeEntry's format; the
//	                            entries of version 1 had another format
//	                            and are never read)
//	ptojit:1:b:<sha256 hex>     a blob: 0x00 then its bytes, or
//	                            0x01, uvarint size, uvarint chunk size
//	ptojit:1:b:<sha256 hex>:<i> chunk i of a chunked blob
const keyPrefix = "ptojit:1:"

// entryPrefix names entries: their format changed with version 2, blobs'
// did not.
const entryPrefix = "ptojit:2:"

func entryKey(k cache.Key) string { return entryPrefix + "e:" + hex.EncodeToString(k[:]) }
func blobKey(d cache.Digest) string {
	return keyPrefix + "b:" + hex.EncodeToString(d[:])
}
func chunkKey(d cache.Digest, i int) string { return fmt.Sprintf("%s:%d", blobKey(d), i) }

const (
	blobInline  = 0x00
	blobChunked = 0x01
	// Chunk sizes a writer may use; a header naming another is damaged.
	minChunkBytes = 4 << 10
	maxChunkBytes = 64 << 20
	// maxBlobHeader bounds a chunked blob's header.
	maxBlobHeader = 1 + 2*binary.MaxVarintLen64
)

// blobHeader is a chunked blob's header.
type blobHeader struct {
	size, chunk int64
}

func (h blobHeader) chunks() int { return int((h.size + h.chunk - 1) / h.chunk) }

func encodeBlobHeader(h blobHeader) []byte {
	b := []byte{blobChunked}
	b = binary.AppendUvarint(b, uint64(h.size))
	return binary.AppendUvarint(b, uint64(h.chunk))
}

// decodeBlobHeader parses the header of a chunked blob (b starts with
// blobChunked). The header must be canonical and name a size above one
// chunk and at most MaxBlobBytes.
func decodeBlobHeader(b []byte) (blobHeader, error) {
	if len(b) == 0 || b[0] != blobChunked || len(b) > maxBlobHeader {
		return blobHeader{}, errors.New("bad chunked blob header")
	}
	size, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return blobHeader{}, errors.New("bad chunked blob size")
	}
	chunk, m := binary.Uvarint(b[1+n:])
	if m <= 0 || 1+n+m != len(b) {
		return blobHeader{}, errors.New("bad chunked blob chunk size")
	}
	h := blobHeader{size: int64(size), chunk: int64(chunk)}
	if size > MaxBlobBytes || chunk < minChunkBytes || chunk > maxChunkBytes || size <= chunk {
		return blobHeader{}, fmt.Errorf("chunked blob of %d bytes in chunks of %d: out of range", size, chunk)
	}
	if !bytes.Equal(encodeBlobHeader(h), b) {
		return blobHeader{}, errors.New("non-canonical chunked blob header")
	}
	return h, nil
}

// Entries are stored in the cache package's own format (cache.EncodeEntry:
// PJE2, ending with a SHA-256 bound to the key), and read with
// cache.DecodeEntry, which checks the digest, the key, every limit and
// every output name and mode before anything else reads the entry: remote
// entries are verified exactly as local ones. decodeEntry adds the remote
// tier's own bound on blob sizes.
func encodeEntry(e *cache.Entry) ([]byte, error) { return cache.EncodeEntry(e) }

// decodeEntry decodes and verifies the entry stored under key. Any error
// means the entry is damaged.
func decodeEntry(key cache.Key, b []byte) (*cache.Entry, error) {
	e, err := cache.DecodeEntry(key, b)
	if err != nil {
		return nil, err
	}
	for _, o := range e.Outputs {
		if o.Size > MaxBlobBytes {
			return nil, fmt.Errorf("entry: output %s: size %d exceeds %d", o.Name, o.Size, int64(MaxBlobBytes))
		}
	}
	return e, nil
}
