package module

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Names of the package's own files.
const (
	ManifestName  = "module.json"
	SignatureName = "module.sig"
)

// Limits of a package (archive or directory).
const (
	MaxEntries     = 4096      // files
	MaxFileSize    = 256 << 20 // bytes of one file
	MaxPackageSize = 1 << 30   // bytes of all files, and of an archive
	MaxNameLen     = 255       // bytes of a name
	archiveMode    = 0o644
)

// EntryError is an entry of a package source that the hardened reader
// refuses; Name is the offending name.
type EntryError struct {
	Name   string
	Reason string
}

func (e *EntryError) Error() string { return fmt.Sprintf("package entry %q: %s", e.Name, e.Reason) }

// checkName accepts a relative slash-separated name of clean components.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("name longer than %d bytes", MaxNameLen)
	case !utf8.ValidString(name):
		return errors.New("name is not valid UTF-8")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute name")
	case strings.ContainsAny(name, "\\\x00"):
		return errors.New("name holds a backslash or NUL")
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return errors.New("name holds a control character")
		}
	}
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "":
			return errors.New("empty path component (a trailing or doubled slash)")
		case ".":
			return errors.New("'.' component")
		case "..":
			return errors.New("'..' component (path traversal)")
		}
	}
	return nil
}

// Files are the entries of a package source by name, after the hardened
// extraction. Only regular files exist; directories are implied.
type Files map[string][]byte

// files collects entries through the rules every source obeys: valid names,
// no duplicates, no name that is also a directory of another, and the
// count and size limits.
type collector struct {
	files Files
	total int64
}

func (c *collector) add(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return &EntryError{Name: name, Reason: err.Error()}
	}
	if _, dup := c.files[name]; dup {
		return &EntryError{Name: name, Reason: "duplicate name"}
	}
	if len(c.files) >= MaxEntries {
		return &EntryError{Name: name, Reason: fmt.Sprintf("more than %d entries", MaxEntries)}
	}
	if int64(len(data)) > MaxFileSize {
		return &EntryError{Name: name, Reason: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	c.total += int64(len(data))
	if c.total > MaxPackageSize {
		return &EntryError{Name: name, Reason: fmt.Sprintf("the package exceeds %d bytes", MaxPackageSize)}
	}
	c.files[name] = data
	return nil
}

func (c *collector) finish() (Files, error) {
	names := make([]string, 0, len(c.files))
	for n := range c.files {
		names = append(names, n)
	}
	slices.Sort(names)
	// A name that is a directory of another ("a" and "a/b") could not be
	// extracted; refuse it.
	for i := 0; i+1 < len(names); i++ {
		for _, next := range names[i+1:] {
			if !strings.HasPrefix(next, names[i]) {
				break
			}
			if strings.HasPrefix(next, names[i]+"/") {
				return nil, &EntryError{Name: next, Reason: fmt.Sprintf("its parent %q is a file", names[i])}
			}
		}
	}
	return c.files, nil
}

// ReadArchive reads a .ptomodule archive through the hardened extraction:
// every entry a regular file with a valid name, in sorted order, and the
// whole archive byte-identical to its canonical re-serialization (see
// WriteArchive), so no byte (header, padding, trailer) can change
// unnoticed.
func ReadArchive(b []byte) (Files, error) {
	if len(b) > MaxPackageSize {
		return nil, fmt.Errorf("archive of %d bytes exceeds the limit of %d", len(b), MaxPackageSize)
	}
	c := &collector{files: Files{}}
	br := bytes.NewReader(b)
	tr := tar.NewReader(br)
	var order []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if len(order) > 0 {
				return nil, fmt.Errorf("archive: the tar structure is damaged after entry %q: %w", order[len(order)-1], err)
			}
			return nil, fmt.Errorf("archive: the tar structure is damaged at the first entry: %w", err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, &EntryError{Name: h.Name, Reason: fmt.Sprintf("a link (to %q); packages hold regular files only", h.Linkname)}
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return nil, &EntryError{Name: h.Name, Reason: "a device or FIFO; packages hold regular files only"}
		case tar.TypeDir:
			return nil, &EntryError{Name: h.Name, Reason: "a directory entry; packages hold regular files only (directories are implied)"}
		default:
			return nil, &EntryError{Name: h.Name, Reason: fmt.Sprintf("tar entry type %q; packages hold regular files only", h.Typeflag)}
		}
		if h.Size > MaxFileSize {
			return nil, &EntryError{Name: h.Name, Reason: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
		}
		// The claimed size must be present before it is allocated: a
		// 512-byte header may claim MaxFileSize.
		if h.Size > int64(br.Len()) {
			return nil, &EntryError{Name: h.Name, Reason: fmt.Sprintf("truncated: its header claims %d bytes, %d remain in the archive", h.Size, br.Len())}
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, &EntryError{Name: h.Name, Reason: fmt.Sprintf("truncated: %v", err)}
		}
		if err := c.add(h.Name, data); err != nil {
			return nil, err
		}
		order = append(order, h.Name)
	}
	if !slices.IsSorted(order) {
		return nil, errors.New("archive: entries are not in sorted order (not a canonical package)")
	}
	files, err := c.finish()
	if err != nil {
		return nil, err
	}
	canon, err := WriteArchive(files)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if !bytes.Equal(canon, b) {
		at := 0
		for at < len(b) && at < len(canon) && b[at] == canon[at] {
			at++
		}
		return nil, fmt.Errorf("archive: not byte-identical to its canonical form (first difference at byte %d of %d); the package was altered or not written by ptojit module pack", at, len(b))
	}
	return files, nil
}

// WriteArchive returns the canonical archive of files: a ustar tar with one
// regular-file entry per name in sorted order, mode 0644, uid and gid 0,
// empty owner names, mtime 0, no directory entries, and the standard
// two-block trailer.
func WriteArchive(files Files) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, &EntryError{Name: n, Reason: err.Error()}
		}
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     n,
			Mode:     archiveMode,
			Size:     int64(len(files[n])),
			ModTime:  time.Unix(0, 0),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, &EntryError{Name: n, Reason: err.Error()}
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadDir reads a package directory through the same hardened extraction
// as ReadArchive: regular files only (a symbolic link, device, FIFO or
// socket anywhere is refused with its name, and a file replaced by one
// after the walk saw it is refused without waiting on it), the same name
// rules and limits, a file over MaxFileSize refused by its size before a
// byte of it is read. Names are slash-separated and relative to dir.
func ReadDir(dir string) (Files, error) {
	c := &collector{files: Files{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			if !d.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		t := d.Type()
		switch {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			return &EntryError{Name: name, Reason: fmt.Sprintf("a symbolic link (to %q); packages hold regular files only", target)}
		case !t.IsRegular():
			return &EntryError{Name: name, Reason: "not a regular file (device, FIFO or socket)"}
		}
		if err := checkName(name); err != nil {
			return &EntryError{Name: name, Reason: err.Error()}
		}
		f, err := os.OpenFile(p, os.O_RDONLY|syscallNoFollow|syscallNonBlock, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
			return &EntryError{Name: name, Reason: fmt.Sprintf("larger than %d bytes (%d)", MaxFileSize, fi.Size())}
		}
		if fi.Mode().IsRegular() && c.total+fi.Size() > MaxPackageSize {
			return &EntryError{Name: name, Reason: fmt.Sprintf("the package exceeds %d bytes", MaxPackageSize)}
		}
		data, err := readBounded(f, fi, MaxFileSize)
		if err != nil {
			return &EntryError{Name: name, Reason: err.Error()}
		}
		return c.add(name, data)
	})
	if err != nil {
		return nil, err
	}
	return c.finish()
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
