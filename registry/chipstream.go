package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
)

// ChipHashidFrom returns ChipHashid of the size-byte blob r yields,
// reading it once, in order, and holding only its header and one child
// header at a time: a callable of any size costs a few KiB. It validates
// the blob exactly as ChipHashid does (CALLABLE_BLOB_INVALID), and reads r
// to its end, so that a verifying reader checks what it yielded; a blob
// shorter or longer than size is invalid. An error of r itself is
// returned wrapped, unchanged in kind.
func ChipHashidFrom(platform, runtime string, r io.Reader, size int64) (Hashid, error) {
	if _, err := TargetArch(platform); err != nil {
		return Hashid{}, err
	}
	sig, sum, err := chipSignatureFrom(r, size)
	if err != nil {
		return Hashid{}, err
	}
	d, err := BuildChipDescriptor(platform, runtime, sum, SignatureSchemaHash(sig))
	if err != nil {
		return Hashid{}, err
	}
	return ComputeHashid(d), nil
}

// chipStream reads a blob in order, hashing every byte it passes.
type chipStream struct {
	r   io.Reader // tees into the hash
	pos uint64    // bytes read so far
}

// read fills b from the stream; the blob ending first is a blob error.
func (s *chipStream) read(op string, b []byte) error {
	n, err := io.ReadFull(s.r, b)
	s.pos += uint64(n)
	return s.short(op, err)
}

// skipTo reads up to byte p of the blob.
func (s *chipStream) skipTo(op string, p uint64) error {
	if p <= s.pos {
		return nil
	}
	n, err := io.CopyN(io.Discard, s.r, int64(p-s.pos))
	s.pos += uint64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return s.short(op, err)
}

// short sorts a read's error: the blob ending early is a blob error,
// anything else the reader's own.
func (s *chipStream) short(op string, err error) error {
	switch err {
	case nil:
		return nil
	case io.EOF, io.ErrUnexpectedEOF:
		return blobErr(op, "blob ends after %d bytes, before its stated size", s.pos)
	}
	return fmt.Errorf("%s: reading the blob: %w", op, err)
}

// chipSignatureFrom is decodeChipCallable's validation over a stream of
// size bytes: it returns the public signature and the SHA-256 of the
// blob.
func chipSignatureFrom(r io.Reader, size int64) ([]Direction, [32]byte, error) {
	const op = "parse callable"
	var none [32]byte
	if size < ChipHeaderSize {
		return nil, none, blobErr(op, "blob is %d bytes, shorter than the %d-byte header", size, ChipHeaderSize)
	}
	n := uint64(size - ChipHeaderSize) // storage
	if n > maxStorage {
		return nil, none, blobErr(op, "storage exceeds %d bytes", uint64(maxStorage))
	}
	h := sha256.New()
	s := &chipStream{r: io.TeeReader(r, h)}
	head := make([]byte, ChipHeaderSize)
	if err := s.read(op, head); err != nil {
		return nil, none, err
	}
	sig, end, err := chipHeader(op, head, n)
	if err != nil {
		return nil, none, err
	}
	if err := chipChildren(op, s, head, n, end); err != nil {
		return nil, none, err
	}
	if err := s.skipTo(op, uint64(size)); err != nil {
		return nil, none, err
	}
	var one [1]byte
	switch k, err := io.ReadAtLeast(r, one[:], 1); {
	case k > 0:
		return nil, none, blobErr(op, "blob is longer than its stated %d bytes", size)
	case err != io.EOF:
		return nil, none, fmt.Errorf("%s: reading the blob: %w", op, err)
	}
	return sig, [32]byte(h.Sum(nil)), nil
}

// chipHeader validates the fixed header of a blob with n bytes of
// storage and returns its signature and the end of the orchestration
// binary in storage.
func chipHeader(op string, head []byte, n uint64) ([]Direction, uint64, error) {
	le := binary.LittleEndian
	sig, err := readSignature(op, "signature", head[offSignature:], int32(le.Uint32(head[offSigCount:])), MaxSignature)
	if err != nil {
		return nil, 0, err
	}
	if _, err := readName(op, "func name", head[offFuncName:], le.Uint32(head[offFuncNameLen:])); err != nil {
		return nil, 0, err
	}
	if _, err := readName(op, "config name", head[offConfigName:], le.Uint32(head[offConfigNameLen:])); err != nil {
		return nil, 0, err
	}
	childCount := int32(le.Uint32(head[offChildCount:]))
	if childCount < 0 || childCount > MaxChildren {
		return nil, 0, blobErr(op, "child count %d outside 0..%d", childCount, MaxChildren)
	}
	binSize := uint64(le.Uint32(head[offBinarySize:]))
	if binSize > n {
		return nil, 0, blobErr(op, "orchestration binary size %d exceeds the %d bytes of storage", binSize, n)
	}
	return sig, binSize, nil
}

// chipChildren validates each child's place and header, reading the
// stream up to and through each child header in turn; end is where the
// orchestration binary ends in storage.
func chipChildren(op string, s *chipStream, head []byte, n, end uint64) error {
	le := binary.LittleEndian
	cb := make([]byte, CoreHeaderSize)
	childCount := int(le.Uint32(head[offChildCount:]))
	for i := range childCount {
		off := uint64(le.Uint32(head[offChildOffsets+4*i:]))
		switch {
		case off%ChildAlign != 0:
			return blobErr(op, "child %d offset %d is not a multiple of %d", i, off, ChildAlign)
		case off < end:
			return blobErr(op, "child %d offset %d overlaps the preceding bytes (which end at %d)", i, off, end)
		case off+CoreHeaderSize > n:
			return blobErr(op, "child %d header at %d exceeds the %d bytes of storage", i, off, n)
		}
		if err := s.skipTo(op, ChipHeaderSize+off); err != nil {
			return err
		}
		if err := s.read(op, cb); err != nil {
			return err
		}
		if _, err := readSignature(op, fmt.Sprintf("child %d signature", i), cb[offCoreSignature:], int32(le.Uint32(cb[offCoreSigCount:])), MaxCoreSignature); err != nil {
			return err
		}
		size := uint64(le.Uint32(cb[offCoreBinarySize:]))
		if off+CoreHeaderSize+size > n {
			return blobErr(op, "child %d binary (%d bytes at %d) exceeds the %d bytes of storage", i, size, off+CoreHeaderSize, n)
		}
		end = off + CoreHeaderSize + size
	}
	if end != n {
		return blobErr(op, "blob has %d bytes after the end of its last part", n-end)
	}
	return nil
}
