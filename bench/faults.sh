#!/usr/bin/env bash
# bench/faults.sh: the full run of the fault suite (test/faults). It builds
# ptojit and ptojitd, then drives them through every fault class: kill -9 of
# the daemon and of clients at random points, targeted byte flips inside
# entries, manifests and blobs, random flips in tables and value logs, a full
# disk (an 8 MiB tmpfs as the cache directory: needs root), silent clients and
# a daemon directory planted by another user. Every build's outputs are
# compared byte for byte with a clean build's; every command runs under a
# deadline. It prints, per fault class, the faults injected, builds run, wrong
# artifacts served, hangs, crashes and how the builds ended.
#
# Usage: bench/faults.sh [SEED]   (the seed of a previous run repeats its faults)
# `go test ./test/faults` runs the short mode of the same suite.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp "${TMPDIR:-/tmp}/ptojit-faults.XXXXXX")
trap 'rm -f "$report"' EXIT
status=0
PTOJIT_FAULTS=full PTOJIT_FAULTS_SEED=${1:-} PTOJIT_FAULTS_REPORT=$report \
	go test -count=1 -timeout 90m -v -run '^TestFaults$' ./test/faults >"$report.log" 2>&1 || status=$?
grep -E -- '^(=== RUN|--- |\s+--- |\s+faults_test.go:[0-9]+: (seed|full disk|hostile)|\s+(faults|world)_test.go:[0-9]+: .*(WRONG|hung|crash|died|not report|refused without|received))' "$report.log" || true
echo
cat "$report" 2>/dev/null || tail -50 "$report.log"
echo "full log: $report.log"
exit $status
