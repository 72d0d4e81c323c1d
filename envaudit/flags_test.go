package envaudit

import (
	"strings"
	"testing"
)

// TestParseScan reads --scan values and refuses those outside the root or
// without a suffix, naming the value.
func TestParseScan(t *testing.T) {
	sc, err := ParseScan("src/x:go, .py")
	if err != nil || sc.Dir != "src/x" || len(sc.Exts) != 2 || sc.Exts[0] != ".go" || sc.Exts[1] != ".py" {
		t.Fatalf("ParseScan = %+v, %v", sc, err)
	}
	for _, bad := range []string{"src", ":go", "/abs:go", "../up:go", "src:"} {
		if _, err := ParseScan(bad); err == nil || !strings.Contains(err.Error(), "--scan \""+bad+"\"") {
			t.Errorf("ParseScan(%q) = %v", bad, err)
		}
	}
}
