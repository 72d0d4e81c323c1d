package toolchain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"

	"github.com/ptojit/ptojit/inventory"
)

// Build-policy file evidence, as PyPTO's native_build_id
//
// A file is ("gnu-build-id", hex) when it is a 64-bit ELF file whose
// program headers hold a PT_NOTE segment with a GNU build-id note, else
// ("sha256", hex of its contents). Only program headers are read, as
// PyPTO does, so that a build-policy record equals PyPTO's for the same
// file: a note only in a section (an object file, a note section no
// segment loads), a 32-bit file, or a file whose section headers are
// broken is read the same way PyPTO reads it. BuildID, which reads note
// sections first and 32-bit files too, serves the content policy's
// dependency walk and never a build-policy record.

// Limits of PyPTO's reader.
const (
	maxProgramHeaders = 4096
	maxNoteSegment    = 1 << 20
)

// FileEvidence is the build-policy evidence of one file: Kind is
// "gnu-build-id" or "sha256", Hex the id or the content digest. Plain data.
type FileEvidence struct{ Kind, Hex string }

// NativeBuildID returns the evidence of the file at path.
func NativeBuildID(path string) (FileEvidence, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileEvidence{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return FileEvidence{}, err
	}
	if id := segmentBuildID(f, fi.Size()); id != nil {
		return FileEvidence{"gnu-build-id", hex.EncodeToString(id)}, nil
	}
	if !fi.Mode().IsRegular() {
		return FileEvidence{}, errors.New("identity input is not a regular file: " + path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return FileEvidence{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return FileEvidence{}, err
	}
	return FileEvidence{"sha256", hex.EncodeToString(h.Sum(nil))}, nil
}

// segmentBuildID is PyPTO's program-header walk: nil when the file is not
// a 64-bit ELF file or no PT_NOTE segment names a GNU build-id.
func segmentBuildID(r io.ReaderAt, length int64) []byte {
	var hdr [64]byte
	if n, _ := r.ReadAt(hdr[:], 0); n != 64 || string(hdr[:5]) != "\x7fELF\x02" || (hdr[5] != 1 && hdr[5] != 2) {
		return nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if hdr[5] == 2 {
		order = binary.BigEndian
	}
	offset := order.Uint64(hdr[32:])
	size, count := uint64(order.Uint16(hdr[54:])), uint64(order.Uint16(hdr[56:]))
	if size < 56 || count == 0 || count >= maxProgramHeaders || offset > uint64(length) || size*count > uint64(length)-offset {
		return nil
	}
	for i := uint64(0); i < count; i++ {
		var ph [56]byte
		if n, _ := r.ReadAt(ph[:], int64(offset+size*i)); n < 4 || order.Uint32(ph[:]) != 4 {
			continue
		}
		start, extent := order.Uint64(ph[8:]), order.Uint64(ph[32:])
		if extent > maxNoteSegment || start > uint64(length) || extent > uint64(length)-start {
			continue
		}
		notes := make([]byte, extent)
		n, _ := r.ReadAt(notes, int64(start))
		if id := firstGNUNote(notes[:n], order); id != nil {
			return id
		}
	}
	return nil
}

// firstGNUNote walks note records exactly as PyPTO does: a name runs to
// namesz bytes (short at the end of the data), a description past the end
// stops the walk.
func firstGNUNote(notes []byte, order binary.ByteOrder) []byte {
	pos := uint64(0)
	total := uint64(len(notes))
	for pos+12 <= total {
		namesz, descsz, kind := uint64(order.Uint32(notes[pos:])), uint64(order.Uint32(notes[pos+4:])), order.Uint32(notes[pos+8:])
		pos += 12
		name := notes[pos:min(total, pos+namesz)]
		pos += (namesz + 3) &^ 3
		end := pos + descsz
		if end > total {
			return nil
		}
		if kind == ntGNUBuildID && string(name) == "GNU\x00" && descsz > 0 {
			return append([]byte(nil), notes[pos:end]...)
		}
		pos += (descsz + 3) &^ 3
	}
	return nil
}

// Value returns the evidence as PyPTO's tuple (kind, hex).
func (e FileEvidence) Value() inventory.Value {
	return inventory.T(inventory.Str(e.Kind), inventory.Str(e.Hex))
}

// BuildTag is the tag of every build-policy component record, PyPTO's.
const BuildTag = "build-identity-v1"

// ReportedBuild returns the build-policy reported_version of a component:
// digest(("build-identity-v1", epoch, value)), epoch None when
// PYPTO_CACHE_EPOCH is unset and its value (even "") when set, as PyPTO's
// os.environ.get.
func ReportedBuild(epoch string, epochSet bool, value inventory.Value) (string, error) {
	var e inventory.Value = inventory.None{}
	if epochSet {
		e = inventory.StrFromOSBytes(epoch)
	}
	d, err := inventory.Digest(inventory.T(inventory.Str(BuildTag), e, value))
	if err != nil {
		return "", err
	}
	return d.String(), nil
}
