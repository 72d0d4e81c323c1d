#!/usr/bin/env bash
# Warm-hit latency seen from a Python frontend, in one interleaved run: one
# Python process calls, round after round,
#
#   client   ptojit.Client.build of the shipped example (the daemon socket,
#            no process start)
#   cli      subprocess.run(["ptojit", "build", ...]) of the same request
#   ccache   subprocess.run(["ccache", "gcc", "-c", ...]) of one of its
#            kernels, a direct-mode hit
#
# and prints the median and p90 of each with the ratios to the ccache hit.
#
#   bash bench/python_client.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}

if ! command -v ccache >/dev/null; then
  apt-get update -qq && apt-get install -y -qq ccache >/dev/null
fi

work=$(mktemp -d /tmp/ptojit-pyhit.XXXXXX)
trap 'PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"

export PTOJIT_CACHE_DIR=$work/cache
export XDG_RUNTIME_DIR=$work/run
export CCACHE_DIR=$work/ccache
export CCACHE_NOHASHDIR=1
export PATH=$work/bin:$PATH
export PYTHONPATH=$PWD/python

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rounds" "$work" <<'PY'
import statistics, subprocess, sys, time
import ptojit

rounds, work = int(sys.argv[1]), sys.argv[2]
req = f"{work}/examples/vadd/request.json"
kernel = f"{work}/examples/vadd/kernel_add.c"
inc = f"{work}/examples/toolchain/runtime/include"
ccache = ["ccache", "gcc", "-std=gnu11", "-O2", "-fPIC", f"-I{inc}", "-c", kernel, "-o", f"{work}/k.o"]
cli = ["ptojit", "build", "--request", req, "--json"]
c = ptojit.Client()

def client():
    r = c.build(req)
    assert r["status"] == "hit", r["status"]

def run(cmd):
    def f():
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return f

cases = {"client": client, "cli": run(cli), "ccache": run(ccache)}
# Prime: a miss each, then hits only.
c.build(req); subprocess.run(ccache, check=True); subprocess.run(ccache, check=True)
client(); run(cli)()
times = {k: [] for k in cases}
for _ in range(rounds):
    for k, f in cases.items():
        t = time.perf_counter()
        f()
        times[k].append((time.perf_counter() - t) * 1e3)
base = statistics.median(times["ccache"])
print(f"{rounds} interleaved rounds, ms")
for k, v in times.items():
    v.sort()
    med = statistics.median(v)
    print(f"  {k:7s} median {med:7.3f}  p90 {v[int(len(v) * 0.9)]:7.3f}  ratio to ccache {med / base:5.2f}x")
PY
ccache --print-stats | grep -E '^(direct_cache_hit|preprocessed_cache_hit|cache_miss)' | tr '\t\n' '= '; echo
