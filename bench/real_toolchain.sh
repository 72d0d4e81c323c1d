#!/usr/bin/env bash
# The real toolchain beside the stand-in, in one run: the vadd_pto example
# (kernels on real PTO-ISA, PTO_ISA_ROOT, a real C++ compiler) and the
# shipped vadd example (the stand-in toolchain), each with its own cache and
# daemon:
#
#   miss         the first build (compiles)
#   first hit    the next build, same daemon: the identity is in memory, the
#                headers are checked for the first time
#   (miss and first hit FIRSTS times, default 3, each on an empty cache with
#   a new daemon; medians)
#   later hits   ROUNDS builds after that, real and stand-in interleaved
#   no-daemon    PTOJIT_DAEMON=0 hits (the identity and every header from
#                disk in a fresh process), 5 rounds
#   cold         the first hit after a daemon restart (the cold identity;
#                reported, no bound)
#
# For each: the build's timings.total and the CLI's wall time, medians for
# the repeated ones, and the ratio of the real example's later hit to the
# stand-in's.
#
#   PTO_ISA_ROOT=~/pto-isa CXX=clang++-19 bash bench/real_toolchain.sh [ROUNDS]
#
# The identity policy is the default (build) unless PYPTO_CACHE_IDENTITY
# says otherwise. ROUNDS defaults to 50.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50}
: "${PTO_ISA_ROOT:?set PTO_ISA_ROOT to a PTO-ISA checkout at the pin of the example}"
export CXX=${CXX:-clang++-19}
if ! command -v "$CXX" >/dev/null; then
  echo "the compiler $CXX is not found: install gcc >= 13 or clang >= 17 (Debian 12: apt-get install clang-19) and set CXX" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-real.XXXXXX")
stop_daemons() {
  for c in real standin; do
    PTOJIT_CACHE_DIR=$work/cache.$c XDG_RUNTIME_DIR=$work/run.$c "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true
  done
}
trap 'stop_daemons; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out" "$work/examples/vadd_pto/out"
mkdir -p "$work/run.real" "$work/run.standin"

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $($CXX --version | head -1); policy ${PYPTO_CACHE_IDENTITY:-build (default)}"
WORK=$work ROUNDS=$rounds FIRSTS=${FIRSTS:-3} python3 - <<'EOF'
import json, os, shutil, statistics, subprocess, sys, time

work, rounds, firsts = os.environ["WORK"], int(os.environ["ROUNDS"]), int(os.environ["FIRSTS"])
ptojit = os.path.join(work, "bin", "ptojit")
examples = {"real": os.path.join(work, "examples", "vadd_pto"), "standin": os.path.join(work, "examples", "vadd")}

def env(which, daemon=True):
    e = dict(os.environ, PTOJIT_CACHE_DIR=os.path.join(work, "cache." + which), XDG_RUNTIME_DIR=os.path.join(work, "run." + which))
    if not daemon:
        e["PTOJIT_DAEMON"] = "0"
    return e

def build(which, daemon=True):
    t = time.perf_counter()
    p = subprocess.run([ptojit, "build", "--json", "--request", "request.json"], cwd=examples[which], env=env(which, daemon), capture_output=True, text=True, timeout=600)
    wall = (time.perf_counter() - t) * 1e3
    if p.returncode != 0:
        sys.exit(f"{which}: ptojit build failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    r = json.loads(p.stdout)
    return r["status"], r["timings"]["total"], wall, r

def stop(which):
    subprocess.run([ptojit, "daemon", "stop"], env=env(which), capture_output=True, timeout=60)

def expect(which, what, status, want, r):
    if status != want:
        sys.exit(f"{which} {what}: {status}, want {want}: {r.get('unavailable') or r.get('miss_reason') or r.get('error')}")

rows = []
for which in ("real", "standin"):
    got = {"miss": ([], []), "first hit": ([], [])}
    for i in range(firsts):
        if i > 0:  # an empty cache and a new daemon for each round
            stop(which)
            shutil.rmtree(os.path.join(work, "cache." + which))
        for what, want in (("miss", "miss"), ("first hit", "hit")):
            s, total, wall, r = build(which)
            expect(which, what, s, want, r)
            got[what][0].append(total)
            got[what][1].append(wall)
    for what, (ts, ws) in got.items():
        rows.append((which, f"{what} (median of {firsts})", statistics.median(ts), statistics.median(ws)))

later = {"real": ([], []), "standin": ([], [])}
for i in range(rounds):
    for which in (("real", "standin") if i % 2 == 0 else ("standin", "real")):
        s, total, wall, r = build(which)
        expect(which, "hit", s, "hit", r)
        later[which][0].append(total)
        later[which][1].append(wall)
for which in ("real", "standin"):
    rows.append((which, f"later hit (median of {rounds})", statistics.median(later[which][0]), statistics.median(later[which][1])))

for which in ("real", "standin"):
    stop(which)
    ts, ws = [], []
    for _ in range(5):
        s, total, wall, r = build(which, daemon=False)
        expect(which, "no-daemon hit", s, "hit", r)
        ts.append(total)
        ws.append(wall)
    rows.append((which, "no-daemon hit (median of 5)", statistics.median(ts), statistics.median(ws)))
    s, total, wall, r = build(which)
    expect(which, "cold hit", s, "hit", r)
    rows.append((which, "cold hit after a daemon restart", total, wall))

print(f"{'example':8} {'build':34} {'timings.total ms':>16} {'CLI wall ms':>12}")
for which, what, total, wall in rows:
    print(f"{which:8} {what:34} {total:16.2f} {wall:12.2f}")
rt, rw = statistics.median(later["real"][0]), statistics.median(later["real"][1])
st, sw = statistics.median(later["standin"][0]), statistics.median(later["standin"][1])
print(f"later hit, real / stand-in: timings.total {rt / st:.2f}x, CLI wall {rw / sw:.2f}x (bound <= 2x)")
first = [(total, wall) for which, what, total, wall in rows if which == "real" and what.startswith("first hit")][0]
print(f"real first hit: timings.total {first[0]:.2f} ms, CLI wall {first[1]:.2f} ms (bound <= 100 ms)")
EOF
