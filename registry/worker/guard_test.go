package worker

import (
	"testing"
	"time"

	"github.com/ptojit/ptojit/test/fixture"
)

// testDeadline bounds each test that starts a worker: one that has not
// finished by then prints every goroutine and ends the test binary, so a
// hang fails in minutes instead of holding the package until go test's
// timeout.
const testDeadline = 2 * time.Minute

// guard arms testDeadline for t.
func guard(t *testing.T) {
	t.Helper()
	fixture.Guard(t, testDeadline)
}
