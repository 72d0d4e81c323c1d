#!/usr/bin/env bash
# Incremental builds, in one run. A generated request with N kernels (default
# 64; distinct sources, each including one shared header and one header of
# its own) and the example's orchestration, built through a warm daemon with
# a counting wrapper on CC (PYPTO_CACHE_IDENTITY=content: the build policy
# refuses a wrapper and builds uncached). Side by side:
#
#   cold     the build on an empty cache (warm daemon: toolchain identities
#            memoized), wall, vs the same N+1 compiles (the wrapper's log:
#            each compile's directory and arguments) run by
#            `xargs -P "$(nproc)"` through the same wrapper (logging
#            elsewhere), so both pay the counting alike
#   edit     one kernel edited (a line appended, 100 ms before the build, as
#            a developer's edit is): compiles counted, CLI wall vs one bare
#            compile of that kernel plus a request hit
#   header   the shared header edited: compiles counted
#   clients  8 concurrent clients building 8 requests that share the N
#            kernels, each with its own orchestration source, on an empty
#            cache: compiles in total
#   verify   a hit of the request in verify mode (PTOJIT_CACHE_VERIFY=1):
#            every unit compiled again and compared, no difference
#
# Every wall figure is the median over ROUNDS rounds (default 5) of
# interleaved runs; ratios are of medians.
#
#   bash bench/incremental.sh [KERNELS [ROUNDS]]
#   bash bench/incremental.sh --smoke     8 kernels, 1 round: checks that the
#                                         script works, asserts the counts only
set -euo pipefail
cd "$(dirname "$0")/.."
kernels=${1:-64}
rounds=${2:-5}
smoke=0
if [ "$kernels" = --smoke ]; then
  smoke=1 kernels=8 rounds=1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-inc.XXXXXX")
trap 'PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"

# The counting wrapper: one file per shared-object compile, holding the
# directory it ran in and its arguments, one a line.
mkdir "$work/log"
cat > "$work/bin/cc" <<EOF
#!/bin/sh
case " \$* " in
*" -shared "*) f=\$(mktemp "$work/log/c.XXXXXX"); { pwd; for a; do printf '%s\n' "\$a"; done; } > "\$f" ;;
esac
exec gcc "\$@"
EOF
chmod +x "$work/bin/cc"
# The same wrapper logging elsewhere: the compiles replayed without ptojit
# pay what ptojit's pay for the counting.
mkdir "$work/log.replay"
sed "s|$work/log/|$work/log.replay/|" "$work/bin/cc" > "$work/bin/cc.replay"
chmod +x "$work/bin/cc.replay"

export PTOJIT_CACHE_DIR=$work/cache
export XDG_RUNTIME_DIR=$work/run
export PYPTO_CACHE_IDENTITY=content
export CC=$work/bin/cc
export PATH=$work/bin:$PATH

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $kernels kernels, $rounds rounds"
python3 - "$work" "$kernels" "$rounds" "$smoke" <<'PY'
import json, os, shlex, statistics, subprocess, sys, time

work, n, rounds, smoke = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
ex = f"{work}/examples"
proj = f"{ex}/inc"
os.makedirs(proj)
vadd = f"{ex}/vadd"
with open(f"{vadd}/vadd.h") as f:
    shared = f.read()
with open(f"{vadd}/kernel_add.c") as f:
    body = f.read().replace('#include "vadd.h"\n', "").replace("zs[i] = xs[i] + ys[i];", "zs[i] = xs[i] + ys[i] * K_SCALE;")
with open(f"{vadd}/orchestration.c") as f:
    orch = f.read()


def write(p, s):
    with open(p, "w") as f:
        f.write(s)


write(f"{proj}/shared.h", shared)
for i in range(n):
    write(f"{proj}/k{i}.h", f"#define K_SCALE {i}.5f\n")
    write(f"{proj}/kernel_{i}.c", f'#include "shared.h"\n#include "k{i}.h"\n/* kernel {i} */\n' + body)
tc = {"pypto_root": "../toolchain/pypto", "runtime_root": "../toolchain/runtime",
      "pto_isa_root": "../toolchain/pto-isa", "ptoas_root": "../toolchain/ptoas"}


def request(name, orch_src):
    write(f"{proj}/{name}.json", json.dumps({
        "name": name, "platform": "a2a3sim", "runtime": "tensormap_and_ringbuffer",
        "orchestration": {"source": orch_src, "function": "vadd_orch", "config": "vadd_orch_config"},
        "kernels": [{"func_id": i, "source": f"kernel_{i}.c", "signature": ["IN", "IN", "OUT"]} for i in range(n)],
        "signature": ["IN", "IN", "OUT", "SCALAR"], "scalar_count": 1, "options": {"opt_level": 2},
        "toolchain": tc, "output_dir": f"out_{name}"}, indent=1))
    return f"{proj}/{name}.json"


req = request("request", "orchestration.c")
write(f"{proj}/orchestration.c", orch)
clients = []
for j in range(8):
    write(f"{proj}/orchestration_{j}.c", orch + f"\n/* client {j} */\nconst int inc_client_{j} = {j};\n")
    clients.append(request(f"client_{j}", f"orchestration_{j}.c"))

logdir = f"{work}/log"


def logged():
    """The compiles logged since the last call: (cwd, args) each; the log is emptied."""
    out = []
    for name in sorted(os.listdir(logdir)):
        with open(f"{logdir}/{name}") as f:
            lines = f.read().split("\n")
        os.remove(f"{logdir}/{name}")
        out.append((lines[0], lines[1:-1]))
    return out


def build(r, want=None):
    t = time.perf_counter()
    p = subprocess.run(["ptojit", "build", "--json", "--request", r], capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"ptojit build {r}: exit {p.returncode}\n{p.stderr}")
    resp = json.loads(p.stdout)
    if want and resp["status"] != want:
        raise SystemExit(f"ptojit build {r}: {resp['status']}, want {want}: {resp.get('miss_reason') or resp.get('unavailable')}")
    return wall, resp


def clear():
    subprocess.run(["ptojit", "cache", "clear"], check=True, capture_output=True)


def scripts(compiles, tag):
    """Shell scripts that run the logged compiles again through the
    replay wrapper, outputs under a directory of their own."""
    d = f"{work}/replay_{tag}"
    os.makedirs(d, exist_ok=True)
    paths = []
    for k, (cwd, args) in enumerate(compiles):
        args = list(args)
        for flag, ext in (("-o", "so"), ("-MF", "d")):
            i = args.index(flag)
            args[i + 1] = f"{d}/{k}.{ext}"
        p = f"{d}/{k}.sh"
        write(p, f"cd {shlex.quote(cwd)} && exec {work}/bin/cc.replay {' '.join(shlex.quote(a) for a in args)}\n")
        paths.append(p)
    return paths


def run_xargs(paths):
    t = time.perf_counter()
    subprocess.run(f"printf '%s\\n' {' '.join(paths)} | xargs -P \"$(nproc)\" -n1 sh", shell=True, check=True)
    return (time.perf_counter() - t) * 1000


def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return (time.perf_counter() - t) * 1000


med = statistics.median
# A warm daemon: the example's build memoizes the toolchain identities.
build(f"{vadd}/request.json")
logged()
fails = []

cold, xargs, cold_counts = [], [], []
replay = None
for r in range(rounds):
    clear()
    wall, _ = build(req, "miss")
    cold.append(wall)
    compiles = logged()
    cold_counts.append(len(compiles))
    if replay is None:
        replay = scripts(compiles, "cold")
        kernel7 = next(p for p, (_, a) in zip(replay, compiles) if a[-1].endswith("kernel_7.c"))
    xargs.append(run_xargs(replay))
print(f"cold      ptojit {med(cold):8.1f} ms ({cold_counts[0]} compiles)   xargs -P{os.cpu_count()} {med(xargs):8.1f} ms   ratio {med(cold) / med(xargs):.2f}x")
if cold_counts[0] != n + 1:
    fails.append(f"cold build compiled {cold_counts[0]}, want {n + 1}")

edit, bare, hit, edit_counts = [], [], [], []
for r in range(rounds):
    with open(f"{proj}/kernel_7.c", "a") as f:
        f.write(f"int inc_edit_{r}(void) {{ return {r}; }}\n")
    # A developer's edit is older than the write-then-build window (40 ms)
    # when the build starts; a frontend that writes and builds at once
    # waits 20 ms more (docs/design.md, settle).
    time.sleep(0.1)
    wall, resp = build(req, "miss")
    edit.append(wall)
    edit_counts.append(len(logged()))
    bare.append(timed(["sh", kernel7]))
    w, _ = build(req, "hit")
    hit.append(w)
line = [u for u in resp.get("units", []) if u["status"] != "hit"]
tm = resp["timings"]
print("edit      the last edit's build (ms): " + ", ".join(f"{k} {tm[k]:.1f}" for k in ("identity", "lookup", "compile", "publish", "total")))
print(f"edit      ptojit {med(edit):8.1f} ms ({edit_counts[-1]} compile: {line[0]['name'] if line else '-'})   bare compile {med(bare):6.1f} ms + hit {med(hit):6.1f} ms   ratio {med(edit) / (med(bare) + med(hit)):.2f}x")
if any(c != 1 for c in edit_counts):
    fails.append(f"one kernel edited compiled {edit_counts}, want 1 each round")

with open(f"{proj}/shared.h", "a") as f:
    f.write("/* shared edit */\n")
wall, _ = build(req, "miss")
hdr = len(logged())
print(f"header    ptojit {wall:8.1f} ms ({hdr} compiles)")
if hdr != n:
    fails.append(f"the shared header edited compiled {hdr}, want {n}")

clear()
t = time.perf_counter()
procs = [subprocess.Popen(["ptojit", "build", "--request", c], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in clients]
for p in procs:
    if p.wait() != 0:
        raise SystemExit(f"a concurrent build failed: {p.stderr.read()}")
wall = (time.perf_counter() - t) * 1000
total = len(logged())
print(f"clients   8 concurrent requests sharing {n} kernels: {total} compiles in total (want {n + 8}), {wall:.1f} ms")
if total != n + 8:
    fails.append(f"8 concurrent requests compiled {total}, want {n + 8}")

# Verify mode: the request's hit compiles every unit again and compares
# each object and the packed outputs; a difference fails the build.
build(req, "miss")
logged()
t = time.perf_counter()
p = subprocess.run(["ptojit", "build", "--json", "--request", req], capture_output=True, text=True,
                   env=dict(os.environ, PTOJIT_CACHE_VERIFY="1"))
wall = (time.perf_counter() - t) * 1000
vcount = len(logged())
vstatus = json.loads(p.stdout)["status"] if p.returncode == 0 else f"exit {p.returncode}: {p.stderr.strip()}"
print(f"verify    a hit in verify mode: {vstatus}, {vcount} units compiled again, {wall:.1f} ms")
if vstatus != "hit" or vcount != n + 1:
    fails.append(f"verify mode: {vstatus} with {vcount} compiles, want a hit with {n + 1}")
if fails:
    raise SystemExit("incremental: " + "; ".join(fails))
PY
