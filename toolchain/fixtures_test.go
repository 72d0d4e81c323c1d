package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// writeFiles creates files (relative slash paths) under dir. A value
// starting with "->" makes a symlink to the rest.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if len(body) > 2 && body[:2] == "->" {
			if err := os.Symlink(body[2:], p); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			tb.Fatal(err)
		}
	}
}

// makeRepo makes a git repository at dir with go-git, holding files in one
// commit, and returns the commit id.
func makeRepo(tb testing.TB, dir string, files map[string]string) string {
	tb.Helper()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		tb.Fatal(err)
	}
	writeFiles(tb, dir, files)
	return commitAll(tb, repo, "initial")
}

func commitAll(tb testing.TB, repo *git.Repository, msg string) string {
	tb.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		tb.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		tb.Fatal(err)
	}
	sig := &object.Signature{Name: "ptojit", Email: "ptojit@example.invalid", When: time.Unix(1700000000, 0)}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		tb.Fatal(err)
	}
	return h.String()
}

// genInstallation writes n files of realistic sizes (a few hundred bytes to
// a few tens of KiB) under dir, spread over directories of about 50 files:
// headers, sources, Python modules and a few larger binaries.
func genInstallation(tb testing.TB, dir string, n int) {
	tb.Helper()
	exts := []string{".h", ".hpp", ".cpp", ".py", ".txt", ".json"}
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte('a' + (i*7+i/13)%26)
		if i%61 == 60 {
			buf[i] = '\n'
		}
	}
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/1000), fmt.Sprintf("mod%02d", (i/50)%20))
		if i%50 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		size := 200 + (i*7919)%12000
		if i%500 == 499 {
			size = 60000
		}
		body := append([]byte(fmt.Sprintf("// file %d\n", i)), buf[:size]...)
		p := filepath.Join(d, fmt.Sprintf("f%05d%s", i, exts[i%len(exts)]))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
