// Package soundness is ptojit's soundness suite: a hit must be exactly what
// a fresh build would produce. It starts a warm daemon on a private copy
// of the shipped example (its toolchain roots, the PTO-ISA root made a git
// checkout that the request pins, the ptoas launcher), then makes a
// sequence of ordinary changes to that world, and after each one builds
// the example through the daemon and in a fresh process on an empty cache
// (PTOJIT_DAEMON=0, a new cache directory). The daemon's key and every
// output's bytes must be the fresh process's. The changes: headers created
// beside a source, in an earlier -I directory and shadowing a system
// header, and removed again; same-size edits of a source, of a header, of
// a toolchain header (once through its name, once through a hard link made
// in a directory no watch covers, then removed), of a file of a toolchain
// root through such a link, and of the request file with their old
// modification times restored; a symlink in a toolchain root to a file
// outside it through a symlink elsewhere, its target edited, the link on
// the way retargeted, and the symlink removed; a toolchain root removed,
// renamed in, given a new subdirectory and an edit inside it; the PTO-ISA
// checkout moved off its pin by a commit, back by reset --hard, to another
// branch at the same commit, off and back by update-ref and by a direct
// rewrite of the loose ref, and through packed-refs; the ptoas launcher
// replaced; another cc first on PATH; a semantic variable set and unset;
// an output edited in place with its time restored, and one replaced by a
// rename; clang-19 swapped in for gcc and back, twice; then changes
// judged also by the units the daemon compiled (each unit is its own
// entry): a header one kernel alone includes, created and edited (that
// kernel only), the header both kernels include edited (both), the same
// kernel placed a second time in the request (an object hit, no compile)
// and a define added to one kernel's recipe (that kernel only), each
// undone. It prints how many changes the daemon answered exactly as the
// fresh process did and fails naming each one it did not. After a wrong
// answer it goes on with a new daemon on a new cache directory, warmed on
// the world as it is, so that each change is judged on its own.
//
// `go test ./test/soundness` runs it, the same in -short mode and in CI
// (54 changes, 109 builds: 20 to 120 s on 2 shared cores; the four
// compiler swaps need clang-19 and are left out without it; the release
// before this one's unit changes misses list no units). The full run,
// printing the table of every change and both answers:
//
//	go test -count=1 -v -run '^TestSoundness$' ./test/soundness
//
// PTOJIT_SOUNDNESS_BIN=DIR runs the binaries in DIR (ptojit and ptojitd,
// another release's, each speaking its own daemon protocol) instead of
// building this checkout's.
package soundness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// change is one ordinary change to the world.
type change struct {
	name  string
	apply func(w *world)
}

// changes is the sequence, applied in order: each starts from the world
// the ones before it left.
func changes() []change {
	var (
		offPin       string    // the commit that moves the checkout off its pin
		srcTime      time.Time // kernel_add.c's modification time before its edit
		pyptoAway    string    // where the PyPTO root went
		extraDir     string    // the new subdirectory of the PyPTO root
		outputTime   time.Time
		linkedHeader string // a second name of ptojit_sim.h, made elsewhere
		linkedSource string // a second name of the PyPTO root's jit.py
	)
	sim := func(w *world) string { return filepath.Join(w.tc, "runtime", "include") }
	changes := []change{
		{"nothing changed", func(w *world) {}},
		{"a header created beside a source (ptojit_sim.h, found in the runtime's -I directory until now)", func(w *world) {
			orig := w.read(filepath.Join(sim(w), "ptojit_sim.h"))
			b := append([]byte("#ifndef SOUNDNESS_BESIDE\n#define SOUNDNESS_BESIDE\n__attribute__((used)) static const char soundness_beside[] = \"beside\";\n#endif\n"), orig...)
			w.write(filepath.Join(w.vadd, "ptojit_sim.h"), b)
		}},
		{"the header beside the source removed", func(w *world) {
			w.remove(filepath.Join(w.vadd, "ptojit_sim.h"))
		}},
		{"a header created in an earlier -I directory (pto_world.h in the runtime's, shadowing PTO-ISA's)", func(w *world) {
			w.write(filepath.Join(sim(w), "pto_world.h"), []byte("#define PTO_WORLD_TAG \"runtime\"\n"))
		}},
		{"the header in the earlier -I directory removed", func(w *world) {
			w.remove(filepath.Join(sim(w), "pto_world.h"))
		}},
		{"a header shadowing a system header (stdint.h in the runtime's -I directory)", func(w *world) {
			w.write(filepath.Join(sim(w), "stdint.h"), []byte("#include_next <stdint.h>\n#ifndef SOUNDNESS_STDINT\n#define SOUNDNESS_STDINT\n__attribute__((used)) static const char soundness_stdint[] = \"shadow\";\n#endif\n"))
		}},
		{"the header shadowing the system header removed", func(w *world) {
			w.remove(filepath.Join(sim(w), "stdint.h"))
		}},
		{"a header beside the sources shadowing a system header (string.h, which an angle include does not read from there)", func(w *world) {
			w.write(filepath.Join(w.vadd, "string.h"), []byte("#error the quote directory was searched for an angle include\n"))
		}},
		{"the string.h beside the sources removed", func(w *world) {
			w.remove(filepath.Join(w.vadd, "string.h"))
		}},
		{"a header in a subdirectory of the sources whose quoted include finds the runtime's ptojit_sim.h (sub/extra.h, now included by kernel_add.c)", func(w *world) {
			w.write(filepath.Join(w.vadd, "sub", "extra.h"), []byte("#include \"ptojit_sim.h\"\n"))
			k := filepath.Join(w.vadd, "kernel_add.c")
			w.write(k, append([]byte("#include \"sub/extra.h\"\n"), w.read(k)...))
		}},
		{"a header created beside that header (sub/ptojit_sim.h, where its quoted include looks first)", func(w *world) {
			w.write(filepath.Join(w.vadd, "sub", "ptojit_sim.h"), []byte("__attribute__((used)) static const char soundness_sub[] = \"sub\";\n"))
		}},
		{"the header beside the subdirectory's header removed", func(w *world) {
			w.remove(filepath.Join(w.vadd, "sub", "ptojit_sim.h"))
		}},
		{"kernel_add.c's include of sub/extra.h removed", func(w *world) {
			k := filepath.Join(w.vadd, "kernel_add.c")
			w.write(k, bytes.TrimPrefix(w.read(k), []byte("#include \"sub/extra.h\"\n")))
		}},
		{"a same-size edit of a source, its modification time restored", func(w *world) {
			p := filepath.Join(w.vadd, "kernel_add.c")
			srcTime = w.modTime(p)
			w.editSameSize(p, "source-a", "source-b", srcTime)
		}},
		{"a same-size edit of a header, its modification time restored", func(w *world) {
			p := filepath.Join(w.vadd, "vadd.h")
			w.editSameSize(p, "header-a", "header-b", w.modTime(p))
		}},
		{"a same-size edit of a toolchain header (the runtime's ptojit_sim.h, which a daemon checks through its watcher), its modification time restored", func(w *world) {
			p := filepath.Join(sim(w), "ptojit_sim.h")
			w.editSameSize(p, "the C ABI", "The C ABI", w.modTime(p))
		}},
		{"a same-size edit of that toolchain header written through a hard link made in a directory no watch covers, its modification time restored", func(w *world) {
			linkedHeader = w.editThroughLink(filepath.Join(sim(w), "ptojit_sim.h"), "The C ABI", "THE C ABI")
		}},
		{"the hard link removed (the header its only name again)", func(w *world) {
			w.remove(linkedHeader)
		}},
		{"a same-size edit of a file of the PyPTO root (jit.py, whose content a daemon memoizes in the component's identity) written through a hard link made in a directory no watch covers, its modification time restored", func(w *world) {
			linkedSource = w.editThroughLink(filepath.Join(w.tc, "pypto", "pypto", "jit.py"), "Stand-in", "STAND-IN")
		}},
		{"that hard link removed", func(w *world) {
			w.remove(linkedSource)
		}},
		{"a symlink in the PyPTO package to a file outside its root, through a symlink in a third directory", func(w *world) {
			for _, v := range []string{"one", "two"} {
				w.write(filepath.Join(w.root, "shared-py", v, "extra.py"), []byte("EXTRA = '"+v+"'\n"))
			}
			hop := filepath.Join(w.root, "hop")
			if err := os.MkdirAll(hop, 0o755); err != nil {
				w.t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(w.root, "shared-py", "one", "extra.py"), filepath.Join(hop, "extra.py")); err != nil {
				w.t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(hop, "extra.py"), filepath.Join(w.tc, "pypto", "pypto", "extra.py")); err != nil {
				w.t.Fatal(err)
			}
		}},
		{"the symlink's target edited in place (same size, time restored)", func(w *world) {
			t := filepath.Join(w.root, "shared-py", "one", "extra.py")
			w.editSameSize(t, "one", "ONE", w.modTime(t))
		}},
		{"the symlink in the third directory retargeted (to a file of the same size and time)", func(w *world) {
			one, two := filepath.Join(w.root, "shared-py", "one", "extra.py"), filepath.Join(w.root, "shared-py", "two", "extra.py")
			w.chtime(two, w.modTime(one))
			hop := filepath.Join(w.root, "hop", "extra.py")
			tmp := hop + ".new"
			if err := os.Symlink(two, tmp); err != nil {
				w.t.Fatal(err)
			}
			w.rename(tmp, hop)
		}},
		{"the symlink in the PyPTO package removed", func(w *world) {
			w.remove(filepath.Join(w.tc, "pypto", "pypto", "extra.py"))
		}},
		{"a same-size edit of the request file (opt_level 2 to 3, which a daemon reads through its memo), its modification time restored", func(w *world) {
			p := filepath.Join(w.vadd, "request.json")
			w.editSameSize(p, `"opt_level": 2`, `"opt_level": 3`, w.modTime(p))
		}},
		{"the request file's edit undone the same way", func(w *world) {
			p := filepath.Join(w.vadd, "request.json")
			w.editSameSize(p, `"opt_level": 3`, `"opt_level": 2`, w.modTime(p))
		}},
		{"a toolchain root missing (the PyPTO root renamed away)", func(w *world) {
			pyptoAway = filepath.Join(w.root, "pypto-away")
			w.rename(filepath.Join(w.tc, "pypto"), pyptoAway)
		}},
		{"the toolchain root appears (a new copy renamed in)", func(w *world) {
			stage := filepath.Join(w.root, "pypto-new")
			if err := os.CopyFS(stage, os.DirFS(pyptoAway)); err != nil {
				w.t.Fatal(err)
			}
			w.write(filepath.Join(stage, "pypto", "version.py"), []byte("VERSION = \"new copy\"\n"))
			w.rename(stage, filepath.Join(w.tc, "pypto"))
		}},
		{"a new subdirectory in the toolchain root", func(w *world) {
			extraDir = filepath.Join(w.tc, "pypto", "pypto", "extra")
			w.write(filepath.Join(extraDir, "__init__.py"), []byte("EXTRA = 1\n"))
		}},
		{"an edit inside the new subdirectory", func(w *world) {
			w.write(filepath.Join(extraDir, "__init__.py"), []byte("EXTRA = 2  # edited\n"))
		}},
		{"the PTO-ISA checkout moved off its pin (an empty commit: the same files, another HEAD)", func(w *world) {
			w.git("commit", "-q", "--allow-empty", "-m", "off the pin")
			offPin = w.head()
		}},
		{"the PTO-ISA checkout back at its pin (git reset --hard)", func(w *world) {
			w.git("reset", "-q", "--hard", w.pin)
		}},
		{"the PTO-ISA checkout on another branch at the same commit", func(w *world) {
			w.git("checkout", "-q", "-b", "other")
		}},
		{"the PTO-ISA branch moved off the pin by git update-ref (only the ref's own file changes)", func(w *world) {
			w.git("update-ref", "refs/heads/other", offPin)
		}},
		{"the PTO-ISA branch back at the pin by git update-ref", func(w *world) {
			w.git("update-ref", "refs/heads/other", w.pin)
		}},
		{"the PTO-ISA branch's loose ref rewritten off the pin by another tool (no lock at the top of .git, as git's own update-ref takes)", func(w *world) {
			w.writeRef("other", offPin)
		}},
		{"the PTO-ISA branch's loose ref rewritten back at the pin by another tool", func(w *world) {
			w.writeRef("other", w.pin)
		}},
		{"the PTO-ISA refs packed (git pack-refs --all)", func(w *world) {
			w.git("pack-refs", "--all")
		}},
		{"the PTO-ISA branch moved off the pin inside packed-refs", func(w *world) {
			p := filepath.Join(w.isa, ".git", "packed-refs")
			old := []byte(w.pin + " refs/heads/other\n")
			b := w.read(p)
			if !bytes.Contains(b, old) {
				w.t.Fatalf("%s does not hold %q:\n%s", p, old, b)
			}
			if _, err := os.Stat(filepath.Join(w.isa, ".git", "refs", "heads", "other")); err == nil {
				w.t.Fatal("git pack-refs left the loose ref of the branch")
			}
			// As git rewrites it: a new file renamed over the old one.
			w.write(p+".new", bytes.Replace(b, old, []byte(offPin+" refs/heads/other\n"), 1))
			w.rename(p+".new", p)
			if h := w.head(); h != offPin {
				w.t.Fatalf("HEAD is %s after the packed-refs rewrite, want %s", h, offPin)
			}
		}},
		{"the PTO-ISA checkout back at its pin again (git reset --hard)", func(w *world) {
			w.git("reset", "-q", "--hard", w.pin)
		}},
		{"the ptoas launcher replaced (another version)", func(w *world) {
			p := filepath.Join(w.tc, "ptoas", "bin", "ptoas")
			b := bytes.Replace(w.read(p), []byte("0.0.0-fixture"), []byte("0.0.1-soundness"), 1)
			w.write(p+".new", b)
			if err := os.Chmod(p+".new", 0o755); err != nil {
				w.t.Fatal(err)
			}
			w.rename(p+".new", p)
		}},
		{"a different cc first on PATH (a wrapper that drops the compiler's ident)", func(w *world) {
			gcc := w.lookPath("gcc")
			dir := filepath.Join(w.root, "ccbin")
			w.write(filepath.Join(dir, "cc"), []byte("#!/bin/sh\nexec "+gcc+" -fno-ident \"$@\"\n"))
			if err := os.Chmod(filepath.Join(dir, "cc"), 0o755); err != nil {
				w.t.Fatal(err)
			}
			w.vars["PATH"] = dir + string(os.PathListSeparator) + os.Getenv("PATH")
		}},
		{"PATH as it was", func(w *world) { delete(w.vars, "PATH") }},
		{"a semantic variable set (PYPTO_CACHE_EPOCH)", func(w *world) { w.vars["PYPTO_CACHE_EPOCH"] = "soundness" }},
		{"the semantic variable unset", func(w *world) { delete(w.vars, "PYPTO_CACHE_EPOCH") }},
		{"an output edited in place, its modification time restored", func(w *world) {
			p := filepath.Join(w.vadd, "out", "kernel_0.so")
			outputTime = w.modTime(p)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				w.t.Fatal(err)
			}
			b := make([]byte, 1)
			at := int64(len(w.read(p)) / 2)
			if _, err := f.ReadAt(b, at); err != nil {
				w.t.Fatal(err)
			}
			b[0] ^= 0x5a
			if _, err := f.WriteAt(b, at); err != nil {
				w.t.Fatal(err)
			}
			f.Close()
			w.chtime(p, outputTime)
		}},
		{"an output replaced by a rename (other bytes of the same size and time)", func(w *world) {
			p := filepath.Join(w.vadd, "out", "kernel_1.so")
			mt := w.modTime(p)
			b := w.read(p)
			b[len(b)/2] ^= 0x5a
			tmp := filepath.Join(w.vadd, "out", ".kernel_1.so.edit")
			w.write(tmp, b)
			w.chtime(tmp, mt)
			w.rename(tmp, p)
		}},
	}
	units, _ := unitChanges()
	return append(changes, units...)
}

// unitChanges are the changes whose answer is also judged by the units
// the daemon compiled (each unit is its own entry, so a change compiles
// exactly the units it reaches), and by name, those units in request
// order (empty: none, a unit or request hit).
func unitChanges() ([]change, map[string][]string) {
	const add, scale = "kernels[0] kernel_add.c", "kernels[1] kernel_scale.c"
	kernels := func(req map[string]any) []any { return req["kernels"].([]any) }
	cs := []struct {
		change
		compiled []string
	}{
		{change{"a header used by one kernel only (add_only.h, now included by kernel_add.c)", func(w *world) {
			w.write(filepath.Join(w.vadd, "add_only.h"), []byte("#define SOUNDNESS_ADD_ONLY 1\n"))
			p := filepath.Join(w.vadd, "kernel_add.c")
			w.write(p, append([]byte("#include \"add_only.h\"\n"), w.read(p)...))
		}}, []string{add}},
		{change{"that header edited (only kernel_add.c reads it)", func(w *world) {
			w.appendTo(filepath.Join(w.vadd, "add_only.h"), "__attribute__((used)) static const int soundness_add_only = SOUNDNESS_ADD_ONLY;\n")
		}}, []string{add}},
		{change{"the header both kernels include edited (vadd.h)", func(w *world) {
			w.appendTo(filepath.Join(w.vadd, "vadd.h"), "/* both kernels read this */\n")
		}}, []string{add, scale}},
		{change{"the same kernel placed a second time in the request (kernel_add.c as func_id 2): its object is a hit", func(w *world) {
			w.editRequest(func(req map[string]any) {
				req["kernels"] = append(kernels(req), map[string]any{"func_id": 2, "source": "kernel_add.c", "signature": []any{"IN", "IN", "OUT"}})
			})
		}}, []string{}},
		{change{"the second place removed again (a request hit)", func(w *world) {
			w.editRequest(func(req map[string]any) { req["kernels"] = kernels(req)[:2] })
			w.remove(filepath.Join(w.vadd, "out", "kernel_2.so")) // no build removes an output it no longer writes
		}}, []string{}},
		{change{"a flag changed for one kernel (kernels[1].compile.defines)", func(w *world) {
			w.editRequest(func(req map[string]any) {
				kernels(req)[1].(map[string]any)["compile"] = map[string]any{"defines": []any{"SOUNDNESS_FLAG=1"}}
			})
		}}, []string{scale}},
		{change{"the flag removed again (a request hit)", func(w *world) {
			w.editRequest(func(req map[string]any) { delete(kernels(req)[1].(map[string]any), "compile") })
		}}, []string{}},
	}
	var out []change
	want := map[string][]string{}
	for _, c := range cs {
		out = append(out, c.change)
		want[c.name] = c.compiled
	}
	return out, want
}

// compilerSwaps swap Debian's clang-19 in for gcc (CC and CXX), gcc back,
// and both again (the daemon's memos of each compiler answer the second
// swaps). Without clang-19 there are none (in CI that fails the test).
func compilerSwaps(t *testing.T) []change {
	clang, err1 := exec.LookPath("clang-19")
	clangxx, err2 := exec.LookPath("clang++-19")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no clang-19: the soundness suite swaps it for gcc (apt-get install clang-19)")
		}
		t.Log("the compiler swaps are left out: clang-19 is not installed (apt-get install clang-19)")
		return nil
	}
	toClang := func(w *world) { w.vars["CC"], w.vars["CXX"] = clang, clangxx }
	toGCC := func(w *world) { delete(w.vars, "CC"); delete(w.vars, "CXX") }
	return []change{
		{"clang for gcc (CC=clang-19, CXX=clang++-19)", toClang},
		{"gcc back (CC and CXX unset)", toGCC},
		{"clang again", toClang},
		{"gcc again", toGCC},
	}
}

// writeRef points the loose ref refs/heads/name at commit as a library
// writing refs directly would: a new file beside it renamed over it, and
// nothing else of .git touched.
func (w *world) writeRef(name, commit string) {
	p := filepath.Join(w.isa, ".git", "refs", "heads", name)
	w.write(p+".new", []byte(commit+"\n"))
	w.rename(p+".new", p)
	if h := w.head(); h != commit {
		w.t.Fatalf("HEAD is %s after the ref was rewritten, want %s", h, commit)
	}
}

func (w *world) remove(p string) {
	if err := os.Remove(p); err != nil {
		w.t.Fatal(err)
	}
	w.settle(filepath.Dir(p))
}

func (w *world) rename(from, to string) {
	if err := os.Rename(from, to); err != nil {
		w.t.Fatal(err)
	}
	w.settle(to)
}

func (w *world) modTime(p string) time.Time {
	fi, err := os.Stat(p)
	if err != nil {
		w.t.Fatal(err)
	}
	return fi.ModTime()
}

func (w *world) chtime(p string, mt time.Time) {
	if err := os.Chtimes(p, mt, mt); err != nil {
		w.t.Fatal(err)
	}
	w.settle(p)
}

// editSameSize replaces old by repl (of its length) in p, in place, and
// restores p's modification time to mt.
func (w *world) editSameSize(p, old, repl string, mt time.Time) {
	b := w.read(p)
	if len(old) != len(repl) || !bytes.Contains(b, []byte(old)) {
		w.t.Fatalf("%s: cannot replace %q by %q", p, old, repl)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	_, err = f.WriteAt(bytes.Replace(b, []byte(old), []byte(repl), 1), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.chtime(p, mt)
}

// editThroughLink makes a hard link to p in a new directory no watch
// covers, replaces old by repl (of its length) through it, in place, with
// p's modification time restored, and returns the link.
func (w *world) editThroughLink(p, old, repl string) string {
	mt := w.modTime(p)
	dir, err := os.MkdirTemp(w.root, "elsewhere")
	if err != nil {
		w.t.Fatal(err)
	}
	link := filepath.Join(dir, filepath.Base(p))
	if err := os.Link(p, link); err != nil {
		w.t.Fatal(err)
	}
	w.editSameSize(link, old, repl, mt)
	return link
}

func (w *world) lookPath(name string) string {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	w.t.Fatalf("no %s on PATH", name)
	return ""
}

// row is one change's outcome, for the table.
type row struct {
	name, daemon, fresh string
	diff                []string
}

func TestSoundness(t *testing.T) {
	w := newWorld(t)
	w.start()
	// The warm-up: the daemon's first build of the world.
	if a := w.viaDaemon(); a.failed != "" || a.status == "hit" {
		t.Fatalf("the first build of the example: %s", a)
	}
	_, compiled := unitChanges()
	var rows []row
	exact := 0
	// Each change is applied to the world the ones before it left, and the
	// same warm daemon answers, unless it answered one wrongly.
	for _, c := range append(changes(), compilerSwaps(t)...) {
		c.apply(w)
		d := w.viaDaemon()
		f := w.viaFresh()
		r := row{name: c.name, daemon: d.String(), fresh: f.String(), diff: differences(d, f)}
		if want, ok := compiled[c.name]; ok && d.failed == "" {
			switch {
			case d.status == "miss" && d.units == 0:
				r.diff = append(r.diff, "a miss that lists no units")
			case !slices.Equal(d.compiled, want):
				r.diff = append(r.diff, fmt.Sprintf("compiled %q, want %q", d.compiled, want))
			}
		}
		rows = append(rows, r)
		if pid := w.daemonPID(); pid != w.daemon {
			t.Fatalf("after %q the daemon is %d, not the warm daemon %d: the changes after it would prove nothing", c.name, pid, w.daemon)
		}
		if len(r.diff) == 0 {
			exact++
			continue
		}
		t.Errorf("%s: answered unlike a fresh process: %s\n\tdaemon: %s\n\tfresh:  %s", c.name, strings.Join(r.diff, "; "), r.daemon, r.fresh)
		// A wrong memo or entry would carry over into the changes after
		// this one: a new daemon on a new cache, warmed on the world as
		// it is now, judges each of them on its own.
		w.stop()
		w.start()
		if diff := differences(w.viaDaemon(), f); len(diff) > 0 {
			t.Fatalf("after %q even a new daemon answers unlike the fresh process: %s", c.name, strings.Join(diff, "; "))
		}
	}
	var b strings.Builder
	for i, r := range rows {
		verdict := "exact"
		if len(r.diff) > 0 {
			verdict = "WRONG: " + strings.Join(r.diff, "; ")
		}
		fmt.Fprintf(&b, "%2d. %s\n    daemon %s; fresh %s; %s\n", i+1, r.name, r.daemon, r.fresh, verdict)
	}
	t.Log("changes:\n" + b.String())
	line := fmt.Sprintf("soundness: %d of %d changes answered exactly as a fresh process did (binaries: %s)", exact, len(rows), w.bin)
	t.Log(line)
	fmt.Println(line)
}
