package vadd

import (
	"strings"
	"testing"
	"time"
)

// TestArenaAndReport sizes the arena and writes a result, and refuses a
// blob that is no ChipCallable.
func TestArenaAndReport(t *testing.T) {
	if a := ArenaBytes(3, 16); a < 3*3*64 || a%4096 != 0 && a%16384 != 0 {
		t.Errorf("ArenaBytes(3, 16) = %d", a)
	}
	if err := Check([]byte("not a callable")); err == nil || !strings.HasPrefix(err.Error(), "run: ") {
		t.Errorf("Check of junk = %v", err)
	}
	if p := percentile([]time.Duration{1, 2, 3, 4}, 50); p != 2 || percentile(nil, 50) != 0 {
		t.Errorf("percentile = %v", p)
	}
	r := &Result{Hashid: "sha256:ab", Platform: "a2a3sim", Runtime: "rt", Workers: 2, Tasks: 4, Elements: 8, Verified: 32, TasksPerChip: map[int]int{1: 2, 0: 2}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "verified  32 elements, 0 wrong") || !strings.HasSuffix(b.String(), "per child  0:2  1:2\n") {
		t.Errorf("WriteText:\n%s%v", b.String(), err)
	}
}
