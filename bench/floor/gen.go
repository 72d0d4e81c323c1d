package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// genTree makes DIR holding FILES files of about BYTES bytes in total, in
// a tree shaped like a runtime installation: about six files per
// directory, up to three deep, mostly small sources and headers, a few large libraries,
// and some symlinks (to files and to a directory) as installations have.
// The content is pseudo-random and the same on every run.
func genTree(args []string) {
	if len(args) != 3 {
		fatal(fmt.Errorf("usage: floor gen-tree DIR FILES BYTES"))
	}
	dir := args[0]
	files, err1 := strconv.Atoi(args[1])
	total, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		fatal(fmt.Errorf("gen-tree: FILES and BYTES are numbers"))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src := rand.NewChaCha8([32]byte{3})
	exts := []string{".py", ".h", ".hpp", ".cpp", ".txt", ".json", ".so", ".py"}

	// Sizes: most files small (log-uniform 200 B .. 64 KiB), one in a
	// hundred large (up to 4 MiB), then scaled to the total.
	sizes := make([]int64, files)
	var sum int64
	for i := range sizes {
		var s float64
		if rng.IntN(100) == 0 {
			s = float64(256<<10) * (1 + 15*rng.Float64())
		} else {
			s = 200 * math.Pow(2, 8.4*rng.Float64())
		}
		sizes[i] = int64(s)
		sum += sizes[i]
	}
	buf := make([]byte, 8<<20)
	for i := range sizes {
		sizes[i] = sizes[i] * total / sum
		p := filepath.Join(dir, dirOf(i, files), fmt.Sprintf("f%05d%s", i, exts[i%len(exts)]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fatal(err)
		}
		b := buf[:min(sizes[i], int64(len(buf)))]
		src.Read(b)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			fatal(err)
		}
	}
	// Symlinks: files in one directory linked from another, and one
	// directory linked (its files are read twice, as ptojit and find -L do).
	for i := range 20 {
		j := i * 13
		target, err := filepath.Abs(filepath.Join(dir, dirOf(j, files), fmt.Sprintf("f%05d%s", j, exts[j%len(exts)])))
		if err != nil {
			fatal(err)
		}
		link := filepath.Join(dir, "pkg1/mod1", fmt.Sprintf("link%02d%s", i, exts[j%len(exts)]))
		if err := os.Symlink(target, link); err != nil {
			fatal(err)
		}
	}
	if err := os.Symlink("../pkg3/mod3", filepath.Join(dir, "pkg2/linked-mod")); err != nil {
		fatal(err)
	}
}

// dirOf names the directory of file i of files: about six files per
// directory, as in real installations.
func dirOf(i, files int) string {
	k := (i * 7) % max(1, files/6)
	d := fmt.Sprintf("pkg%d/mod%d", k%10, (k/10)%12)
	if k >= 120 {
		d += fmt.Sprintf("/sub%d", k/120)
	}
	return d
}

// genFile writes BYTES pseudo-random bytes to PATH.
func genFile(args []string) {
	if len(args) != 2 {
		fatal(fmt.Errorf("usage: floor gen-file PATH BYTES"))
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		fatal(err)
	}
	f, err := os.Create(args[0])
	if err != nil {
		fatal(err)
	}
	src := rand.NewChaCha8([32]byte{4})
	buf := make([]byte, 4<<20)
	for n > 0 {
		b := buf[:min(n, int64(len(buf)))]
		src.Read(b)
		if _, err := f.Write(b); err != nil {
			fatal(err)
		}
		n -= int64(len(b))
	}
	if err := f.Close(); err != nil {
		fatal(err)
	}
}
