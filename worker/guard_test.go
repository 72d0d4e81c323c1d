package worker

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// testDeadline bounds each test that starts a worker: one that has not
// finished by then prints every goroutine and ends the test binary, so a
// hang fails in minutes instead of holding the package until go test's
// timeout.
const testDeadline = 2 * time.Minute

// guard arms testDeadline for t.
func guard(t *testing.T) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(testDeadline, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "%s did not finish within %s; goroutines:\n%s\n", name, testDeadline, buf)
		panic(name + " hung")
	})
	t.Cleanup(func() { timer.Stop() })
}
