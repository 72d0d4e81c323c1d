#!/usr/bin/env bash
# Hits on a busy machine: the warm daemon's hits of the shipped example
# after a same-bytes touch of a toolchain header
# (toolchain/runtime/include/ptojit_sim.h), in two phases of the same run:
#
#   idle   nothing else touches the files the daemon watches
#   busy   another process creates and deletes files in a watched ancestor
#          of the header (the copied example's toolchain directory;
#          CHURN_DIR, relative to the copy's work directory, chooses another:
#          CHURN_DIR=examples, CHURN_DIR=examples/toolchain/runtime) at
#          about 100 events per second
#
# Each phase runs ROUNDS rounds of: touch the header (same bytes, a new
# mtime), then HITS builds with the CLI (`ptojit build --json`). The first
# build after a touch re-reads what the touch invalidated; the medians are
# of the later ones (CLI wall and the daemon's timings.total), with the
# ratio busy/idle, and `daemon status`'s memo drops and their reasons.
# PYPTO_CACHE_IDENTITY=content runs it under the content policy.
#
#   bash bench/busy_watch.sh [ROUNDS [HITS]]   (default 10 rounds, 10 hits)
#   bash bench/busy_watch.sh --smoke           2 rounds of 3: checks that
#                                              the script works, asserts
#                                              no timing
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
hits=${2:-10}
if [ "$rounds" = --smoke ]; then
  rounds=2
  hits=3
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-busy.XXXXXX")
trap 'kill "$churn" 2>/dev/null || true; PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
churn=""
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"
export PTOJIT_CACHE_DIR=$work/cache
export XDG_RUNTIME_DIR=$work/run
export PATH=$work/bin:$PATH
churn_dir=$work/${CHURN_DIR:-examples/toolchain}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rounds" "$hits" "$work" "$churn_dir" <<'PY'
import json, os, statistics, subprocess, sys, time

rounds, hits, work, churn_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
req = f"{work}/examples/vadd/request.json"
header = f"{work}/examples/toolchain/runtime/include/ptojit_sim.h"
cli = [f"{work}/bin/ptojit", "build", "--request", req, "--json"]


def build():
    t = time.perf_counter()
    out = subprocess.run(cli, check=True, capture_output=True, text=True).stdout
    wall = (time.perf_counter() - t) * 1e3
    r = json.loads(out)
    return r["status"], wall, r["timings"]["total"]


def status():
    out = subprocess.run([f"{work}/bin/ptojit", "daemon", "status", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def phase(name):
    walls, totals, firsts = [], [], []
    for _ in range(rounds):
        os.utime(header)  # same bytes, a new mtime
        for i in range(hits):
            st, wall, total = build()
            if st != "hit":
                raise SystemExit(f"{name}: build after the touch: {st}, want hit")
            if i == 0:
                firsts.append(wall)
            else:
                walls.append(wall)
                totals.append(total)
    return statistics.median(walls), statistics.median(totals), statistics.median(firsts)


st, _, _ = build()  # starts the daemon, fills the cache
for _ in range(3):
    build()
idle = phase("idle")
s0 = status()
churn = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
d, i = sys.argv[1], 0
next = time.monotonic()
while True:
    p = os.path.join(d, f".churn{i % 8}")
    open(p, "w").close()   # a create (and a close-write) event
    os.unlink(p)           # a delete event
    i += 1
    next += 0.02           # 2 files, 100 events/s counting create and delete
    time.sleep(max(0, next - time.monotonic()))
""", churn_dir])
try:
    time.sleep(1)
    busy = phase("busy")
finally:
    churn.kill()
s1 = status()
print(f"{'phase':6} {'cli median ms':>14} {'timings.total median ms':>24} {'first after touch ms':>21}")
for n, v in (("idle", idle), ("busy", busy)):
    print(f"{n:6} {v[0]:14.1f} {v[1]:24.2f} {v[2]:21.1f}")
print(f"busy/idle: cli {busy[0]/idle[0]:.2f}x, timings.total {busy[1]/idle[1]:.2f}x")
w0, w1 = s0.get("watch", {}), s1.get("watch", {})
print(f"busy phase: {w1.get('events', 0) - w0.get('events', 0)} events, {w1.get('memos_dropped', 0) - w0.get('memos_dropped', 0)} memos dropped")
for d in (w1.get("recent_drops") or [])[-5:]:
    print(f"  dropped: {d}")
PY
