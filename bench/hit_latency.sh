#!/usr/bin/env bash
# Warm-hit latency, in one interleaved run: one Python process runs, round
# after round, each of (in a new, seeded order each round)
#
#   cli       `ptojit build` of the shipped example (static client, the default
#             build-policy identity), answered by the daemon from the cache
#   ccache    `ccache gcc -c` of one of its kernels, a direct-mode hit
#             (both started with os.posix_spawn, as a shell or make would)
#   client    ptojit.Client.build of the same request (the daemon socket,
#             no process start)
#   ccache.py subprocess.run(["ccache", "gcc", "-c", ...]) of that kernel
#   go.floor  a static Go program whose main is empty, built like the
#             client and spawned alike: the least any Go client costs
#             before it does anything (the runtime's start and exit)
#
# and prints the median and p90 of each, the ratios cli/ccache,
# go.floor/ccache (what of the CLI's target a Go process leaves for the
# client's and the daemon's work) and client/ccache.py, and the daemon's
# share: the median of the build's own
# timings (timings.total and timings.phases_us of the client's responses).
#
#   bash bench/hit_latency.sh [ROUNDS]    (default 300)
#   bash bench/hit_latency.sh --smoke     a few rounds: checks that the script
#                                         works, asserts no timing
#   bash bench/hit_latency.sh --baseline BIN_DIR [ROUNDS]
#                                         also runs BIN_DIR's ptojit and ptojitd
#                                         (built from another commit), with
#                                         their own cache and their own copy of
#                                         the example, interleaved in the
#                                         same rounds, and prints the ratios
#                                         of the cli and daemon medians (the
#                                         baseline's daemon timings come from
#                                         its CLI's --json, so the baseline may
#                                         speak another daemon protocol)
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=""
if [ "${1:-}" = --baseline ]; then
  baseline=$(cd "$2" && pwd)
  shift 2
fi
rounds=${1:-300}
smoke=0
if [ "$rounds" = --smoke ]; then
  smoke=1
  rounds=3
fi

if ! command -v ccache >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ccache >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-hit.XXXXXX")
trap 'PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; if [ -n "$baseline" ]; then PTOJIT_CACHE_DIR=$work/cache.base XDG_RUNTIME_DIR=$work/run.base "$baseline/ptojit" daemon stop >/dev/null 2>&1 || true; fi; rm -rf "$work"' EXIT
# The client as the README builds it: static (CGO_ENABLED=0), so it starts
# without the dynamic loader.
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
# The floor: the same toolchain and flags, an empty main.
mkdir "$work/gofloor"
printf 'package main\n\nfunc main() {}\n' > "$work/gofloor/main.go"
printf 'module gofloor\n\ngo 1.26\n' > "$work/gofloor/go.mod"
(cd "$work/gofloor" && CGO_ENABLED=0 GOWORK=off go build -o "$work/bin/gofloor" .)
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"
# The baseline builds its own copy (as another checkout would): sharing one
# output directory, each would find the files the other just rewrote, and
# neither hit would be what it is on its own.
cp -r "$work/examples" "$work/examples.base"

export PTOJIT_CACHE_DIR=$work/cache
export XDG_RUNTIME_DIR=$work/run
export CCACHE_DIR=$work/ccache
export CCACHE_NOHASHDIR=1
export PATH=$work/bin:$PATH
export PYTHONPATH=$PWD/python

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rounds" "$work" "$smoke" "$baseline" <<'PY'
import json, os, random, statistics, subprocess, sys, time
import ptojit

rounds, work, smoke, baseline = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4]
req = f"{work}/examples/vadd/request.json"
kernel = f"{work}/examples/vadd/kernel_add.c"
inc = f"{work}/examples/toolchain/runtime/include"
ccache = ["ccache", "gcc", "-std=gnu11", "-O2", "-fPIC", f"-I{inc}", "-c", kernel, "-o", f"{work}/k.o"]
cli = [f"{work}/bin/ptojit", "build", "--request", req]
ccache_exe = subprocess.run(["sh", "-c", "command -v ccache"], capture_output=True, text=True, check=True).stdout.strip()
c = ptojit.Client()
null = os.open(os.devnull, os.O_WRONLY)
daemon_ms, phases = [], {}


def spawn(argv):
    exe = argv[0] if os.path.isabs(argv[0]) else ccache_exe
    def f():
        pid = os.posix_spawn(exe, argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{argv[0]} failed")
    return f


def client():
    r = c.build(req)
    if r["status"] != "hit":
        raise SystemExit(f"Client.build: {r['status']}, want hit")
    daemon_ms.append(r["timings"]["total"])
    for k, v in (r["timings"].get("phases_us") or {}).items():
        phases.setdefault(k, []).append(v)


def ccache_py():
    subprocess.run(ccache, check=True, stdout=subprocess.DEVNULL)


cases = {"cli": spawn(cli), "ccache": spawn(ccache), "client": client, "ccache.py": ccache_py,
         "go.floor": spawn([f"{work}/bin/gofloor"])}
base_ms = []
if baseline:
    # The baseline's binaries, with their own cache and daemon.
    benv = dict(os.environ, PTOJIT_CACHE_DIR=f"{work}/cache.base", XDG_RUNTIME_DIR=f"{work}/run.base",
                PATH=f"{baseline}:" + os.environ["PATH"])
    bcli = [f"{baseline}/ptojit", "build", "--request", f"{work}/examples.base/vadd/request.json"]
    # The baseline may speak another daemon protocol than this checkout's
    # Python client, so its daemon's timings come from its own CLI (--json).
    bjson = bcli + ["--json"]

    def bspawn():
        pid = os.posix_spawn(bcli[0], bcli, benv, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("baseline ptojit failed")

    def bdaemon():
        r = json.loads(subprocess.run(bjson, env=benv, check=True, capture_output=True, text=True).stdout)
        if r["status"] != "hit":
            raise SystemExit(f"baseline ptojit build --json: {r['status']}, want hit")
        base_ms.append(r["timings"]["total"])

    subprocess.run(bcli, env=benv, check=True, stdout=subprocess.DEVNULL)
    cases["cli.base"], cases["json.base"] = bspawn, bdaemon
# Prime: a miss each, then hits only.
c.build(req)
subprocess.run(ccache, check=True)
subprocess.run(ccache, check=True)
out = subprocess.run(cli, check=True, capture_output=True, text=True).stdout
if not out.startswith("hit"):
    raise SystemExit(f"ptojit build: {out.splitlines()[:1]}, want a hit")
for f in cases.values():  # untimed rounds
    f()
daemon_ms.clear(); phases.clear(); base_ms.clear()
times = {k: [] for k in cases}
# Each round runs the cases in a new order (a seeded shuffle, so a run can
# be repeated): a case that always ran first, or always right after
# another, would carry that position's cost or benefit in its figures.
order = random.Random(1)
for _ in range(rounds):
    keys = list(cases)
    order.shuffle(keys)
    for k in keys:
        f = cases[k]
        t = time.perf_counter()
        f()
        times[k].append((time.perf_counter() - t) * 1e3)
med = {k: statistics.median(v) for k, v in times.items()}
print(f"{rounds} interleaved rounds, ms")
for k, v in times.items():
    v = sorted(v)  # times[k] keeps the order of the rounds (interval pairs them)
    print(f"  {k:9s} median {med[k]:7.3f}  p90 {v[int(len(v) * 0.9)]:7.3f}")


def interval(a, b, n=2000):
    """A bootstrap 95% interval of median(a) / median(b): the rounds are
    resampled (the same rounds for both, as they ran side by side)."""
    rng = random.Random(2)
    pairs = list(zip(times[a], times[b]))
    rs = []
    for _ in range(n):
        s = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        rs.append(statistics.median(x for x, _ in s) / statistics.median(y for _, y in s))
    rs.sort()
    return rs[int(n * 0.025)], rs[int(n * 0.975) - 1]


for a, b, target in (("cli", "ccache", 0.65), ("go.floor", "ccache", None), ("client", "ccache.py", 0.2)):
    lo, hi = interval(a, b)
    note = f"(target <= {target}x)" if target else "(an empty Go program: no Go client can be faster)"
    print(f"  {a + ' / ' + b:19s} {med[a] / med[b]:5.2f}x  95% interval {lo:.2f}-{hi:.2f}x  {note}")
print(f"  cli - go.floor       {med['cli'] - med['go.floor']:5.3f} ms: the client's own work and the daemon's round trip")
print(f"  load after the rounds: {' '.join(open('/proc/loadavg').read().split()[:3])}")
d = statistics.median(daemon_ms)
print(f"  daemon's own work per hit: median {d:.3f} ms ({d / med['cli']:.0%} of cli, {d / med['client']:.0%} of client)")
print("  phases (median µs): " + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in phases.items()))
if baseline:
    b = statistics.median(base_ms)
    print(f"  against the baseline: cli {med['cli'] / med['cli.base']:5.3f}x, "
          f"daemon's own work {d / b:5.3f}x ({d:.3f} / {b:.3f} ms)")
if smoke:
    print("smoke run: the script works; no timing is asserted")
PY
echo "ccache: $(ccache --print-stats | grep -E '^(direct_cache_hit|preprocessed_cache_hit|cache_miss)' | tr '\t\n' '= ')"
