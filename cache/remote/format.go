package remote

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/ptojit/ptojit/cache"
)

// Keys in Redis. Every key is a single key (no multi-key commands), so a
// cluster may hold them in any slot.
//
//	ptojit:1:e:<key hex>        an entry (entryMagic, see encodeEntry)
//	ptojit:1:b:<sha256 hex>     a blob: 0x00 then its bytes, or
//	                            0x01, uvarint size, uvarint chunk size
//	ptojit:1:b:<sha256 hex>:<i> chunk i of a chunked blob
const keyPrefix = "ptojit:1:"

func entryKey(k cache.Key) string { return keyPrefix + "e:" + hex.EncodeToString(k[:]) }
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

// The entry codec. The cache package owns the entry format and its
// self-digest; until it exports them, the remote tier writes entries in
// this form, and encodeEntry and decodeEntry are the only places that know
// it:
//
//	"PJR1", SHA-256 of the body (32 bytes), body
//
// where the body is the JSON of wireEntry. decodeEntry checks the digest,
// the key, every limit and every output name before anything else reads
// the entry.
const entryMagic = "PJR1"

// Limits of a remote entry, as the cache package bounds its own.
const (
	maxEntryBytes = 8 << 20
	maxOutputs    = cache.MaxOutputs
)

type wireOutput struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
	Mode   uint32 `json:"mode"`
}

type wireEntry struct {
	Key         string            `json:"key"`
	Record      []byte            `json:"record"`
	Outputs     []wireOutput      `json:"outputs"`
	Meta        map[string]string `json:"meta"`
	Created     int64             `json:"created"`
	CompileTime int64             `json:"compile_time"`
}

func encodeEntry(e *cache.Entry) ([]byte, error) {
	w := wireEntry{
		Key:         hex.EncodeToString(e.Key[:]),
		Record:      e.Record,
		Outputs:     make([]wireOutput, len(e.Outputs)),
		Meta:        e.Meta,
		Created:     e.Created.UnixNano(),
		CompileTime: int64(e.CompileTime),
	}
	for i, o := range e.Outputs {
		w.Outputs[i] = wireOutput{Name: o.Name, Size: o.Size, Digest: hex.EncodeToString(o.Digest[:]), Mode: o.Mode}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(body)+len(entryMagic)+sha256.Size > maxEntryBytes {
		return nil, fmt.Errorf("entry of %d bytes is too large for the remote tier", len(body))
	}
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(entryMagic)+len(sum)+len(body))
	out = append(out, entryMagic...)
	out = append(out, sum[:]...)
	return append(out, body...), nil
}

// decodeEntry decodes and verifies the entry stored under key. Any error
// means the entry is damaged.
func decodeEntry(key cache.Key, b []byte) (*cache.Entry, error) {
	if len(b) > maxEntryBytes {
		return nil, fmt.Errorf("entry of %d bytes", len(b))
	}
	if len(b) < len(entryMagic)+sha256.Size || string(b[:len(entryMagic)]) != entryMagic {
		return nil, errors.New("entry: bad magic")
	}
	body := b[len(entryMagic)+sha256.Size:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(entryMagic):len(entryMagic)+sha256.Size]) {
		return nil, errors.New("entry: digest mismatch")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var w wireEntry
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("entry: %v", err)
	}
	if dec.More() {
		return nil, errors.New("entry: trailing data")
	}
	if w.Key != hex.EncodeToString(key[:]) {
		return nil, errors.New("entry: stored under another key")
	}
	if len(w.Record) > cache.MaxRecordBytes || len(w.Outputs) > maxOutputs || len(w.Meta) > cache.MaxMetaPairs {
		return nil, errors.New("entry: over a limit")
	}
	if w.CompileTime < 0 {
		return nil, errors.New("entry: negative compile time")
	}
	e := &cache.Entry{
		Key:         key,
		Record:      w.Record,
		Outputs:     make([]cache.Output, len(w.Outputs)),
		Meta:        w.Meta,
		Created:     time.Unix(0, w.Created),
		CompileTime: time.Duration(w.CompileTime),
	}
	e.LastUsed = e.Created
	seen := map[string]bool{}
	for i, o := range w.Outputs {
		if o.Name == "" || len(o.Name) > cache.MaxNameBytes || o.Name != path.Base(o.Name) || o.Name == "." || o.Name == ".." || seen[o.Name] {
			return nil, fmt.Errorf("entry: output name %q is not a distinct plain file name", o.Name)
		}
		seen[o.Name] = true
		if o.Mode&^0o777 != 0 {
			return nil, fmt.Errorf("entry: output %s: mode %o has more than permission bits", o.Name, o.Mode)
		}
		if o.Size < 0 || o.Size > MaxBlobBytes {
			return nil, fmt.Errorf("entry: output %s: size %d out of range", o.Name, o.Size)
		}
		d, err := hex.DecodeString(o.Digest)
		if err != nil || len(d) != sha256.Size || hex.EncodeToString(d) != o.Digest {
			return nil, fmt.Errorf("entry: output %s: bad digest", o.Name)
		}
		e.Outputs[i] = cache.Output{Name: o.Name, Size: o.Size, Mode: o.Mode}
		copy(e.Outputs[i].Digest[:], d)
	}
	for k, v := range e.Meta {
		if len(k) > cache.MaxMetaBytes || len(v) > cache.MaxMetaBytes {
			return nil, errors.New("entry: meta over a limit")
		}
	}
	return e, nil
}
