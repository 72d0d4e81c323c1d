#!/usr/bin/env bash
# bench/testtime.sh: how long `go test ./...` takes, per package and in all.
#
# It runs `go test -count=1 -json ./...` once (the short form, or the full
# one with PTOJIT_TEST_FULL=1 in the environment), records the load
# average every 10 s while it runs, and prints each package's time (the
# test binary's own, as go test reports it) from the longest, the slowest
# tests of the slowest packages, the whole command's wall time, and the
# load averages seen (first, median, highest). The targets of docs/testing.md:
# under 8 minutes in all and no package over 150 s on an idle 2-core
# machine; on a busy one the load says how far from idle it was.
#
#   bash bench/testtime.sh            # the short form
#   PTOJIT_TEST_FULL=1 bash bench/testtime.sh -timeout 30m
#
# Extra arguments go to go test. The JSON stream is kept in
# $TMPDIR/ptojit-testtime.json for a closer look.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${TMPDIR:-/tmp}/ptojit-testtime.json
loads=$(mktemp)
trap 'rm -f "$loads"' EXIT

(while :; do cut -d' ' -f1 /proc/loadavg >> "$loads"; sleep 10; done) &
sampler=$!
began=$(date +%s)
status=0
go test -count=1 -json "$@" ./... > "$out" || status=$?
ended=$(date +%s)
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true

python3 - "$out" "$loads" "$((ended - began))" "${PTOJIT_TEST_FULL:-}" <<'EOF'
import json, statistics, sys

stream, loads_file, wall, full = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
module = "github.com/ptojit/ptojit"
packages, tests = {}, {}
for line in open(stream):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("Action") not in ("pass", "fail", "skip"):
        continue
    pkg = e["Package"].replace(module, ".", 1).replace("./", "", 1) or "."
    if e.get("Test") is None:
        packages[pkg] = (e.get("Elapsed", 0.0), e["Action"])
    elif "/" not in e["Test"]:
        tests.setdefault(pkg, []).append((e.get("Elapsed", 0.0), e["Test"], e["Action"]))

loads = [float(x) for x in open(loads_file).read().split()]
form = "full (PTOJIT_TEST_FULL=1)" if full == "1" else "short"
print(f"go test ./..., the {form} form: {wall} s wall ({wall / 60:.1f} min)")
if loads:
    print(f"load average (1 min) during it: first {loads[0]:.1f}, median {statistics.median(loads):.1f}, highest {max(loads):.1f}")
print()
print(f"{'package':<36} {'seconds':>8}  result")
for pkg, (secs, action) in sorted(packages.items(), key=lambda kv: -kv[1][0]):
    if secs >= 1 or action == "fail":
        print(f"{pkg:<36} {secs:>8.1f}  {action}")
over = [p for p, (s, _) in packages.items() if s > 150]
print()
print("packages over 150 s:", ", ".join(sorted(over)) or "none")
for pkg, _ in sorted(packages.items(), key=lambda kv: -kv[1][0])[:4]:
    slow = sorted(tests.get(pkg, []), reverse=True)[:5]
    if slow:
        print(f"slowest tests of {pkg}: " + ", ".join(f"{n} {s:.1f} s" for s, n, _ in slow))
EOF
exit "$status"
