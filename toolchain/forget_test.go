package toolchain

import (
	"context"
	"path/filepath"
	"testing"
)

// TestForgetOnlyDependents: an event drops the memos that depend on the
// path it names and no other: a file created beside the installations
// (in the directory above their roots) drops none, a file under one root
// drops that component's memo, and the removal of a directory above the
// roots drops all of them.
func TestForgetOnlyDependents(t *testing.T) {
	dir, in := fiveRoots(t)
	c := NewInstallationIdentityCache(Options{})
	ctx := context.Background()
	if _, err := c.Capture(ctx, in); err != nil || c.Len() != 5 {
		t.Fatalf("capture: %v, %d memos", err, c.Len())
	}
	for _, p := range []string{
		filepath.Join(dir, ".churn0"),         // beside the roots
		filepath.Join(filepath.Dir(dir), "x"), // beside their directory
		filepath.Join(dir, Pypto+".bak"),      // a name that starts like a root
	} {
		if n := c.Forget(p); n != 0 {
			t.Errorf("Forget(%s) dropped %d memos, want 0", p, n)
		}
	}
	if n := c.Forget(filepath.Join(dir, Runtime, "sub", "new.h")); n != 1 {
		t.Errorf("Forget of a file under the runtime root dropped %d memos, want 1", n)
	}
	if n := c.Forget(dir); n != 4 {
		t.Errorf("Forget of the directory above the roots dropped %d memos, want the 4 left", n)
	}
}

// TestUnrelatedForgetKeepsRead: a read in flight when an event names a
// path it does not depend on is memoized; one in flight when an event
// names a path under its roots is not.
func TestUnrelatedForgetKeepsRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		path  func(dir string) string
		memos int
	}{
		{"unrelated", func(dir string) string { return filepath.Join(dir, ".churn0") }, 5},
		{"under a root", func(dir string) string { return filepath.Join(dir, Pypto, "sub", "new.h") }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, in := fiveRoots(t)
			c := NewInstallationIdentityCache(Options{})
			inRead := make(chan string, 5)
			release := make(chan struct{})
			c.readHook = func(name string) { inRead <- name; <-release }
			done := make(chan *Identity)
			go func() { id, _ := c.Capture(context.Background(), in); done <- id }()
			for range 5 {
				<-inRead
			}
			c.Forget(tc.path(dir))
			close(release)
			if id := <-done; id == nil || !id.Usable {
				t.Fatalf("capture: %+v", id)
			}
			if c.Len() != tc.memos {
				t.Fatalf("%d reads memoized across a Forget of %s, want %d", c.Len(), tc.path(dir), tc.memos)
			}
		})
	}
}
