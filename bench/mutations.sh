#!/usr/bin/env bash
# bench/mutations.sh: each check below is mutated by one edit (removed or
# inverted), and the test named beside it must then fail. It proves that the
# tests of these checks can fail; it is not run in CI.
#
# The tree is copied (git ls-files) into a temporary directory and every
# mutation is applied there, one at a time, so the checkout is never
# changed. A mutation must still compile (else it is reported as broken);
# its test then runs with -count=1 and must fail. Each line of the table is
#
#   NAME | FILE | OLD | NEW | PACKAGE | TEST REGEXP
#
# (fields separated by " | ", a bar with a space on each side) where OLD (with \n and \t escapes) occurs exactly once in FILE and is
# replaced by NEW. Exit status: 0 when every mutation is killed, 1 when one
# survives or is broken. Usage: bench/mutations.sh [NAME-REGEXP]
set -euo pipefail

only=${1:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-mutations.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$work" -xf -

table=$(cat <<'TABLE'
numerics | registry/opquery/match.go | if !slices.Contains(d.Numerics, c) { | if slices.Contains(d.Numerics, c) { | ./registry/opquery | TestRejections|TestDeclaredGuarantees
numerics-removed | registry/opquery/match.go | if !slices.Contains(d.Numerics, c) { | if false { | ./registry/opquery | TestRejections|TestDeclaredGuarantees
memory-space | registry/opquery/match.go | if !slices.Contains(d.MemorySpaces, space) { | if false { | ./registry/opquery | TestBatchAndSpaceBounds
memory-space-default | registry/opquery/match.go | \t\tspace = SpaceDevice\n | \n | ./registry/opquery | TestBatchAndSpaceBounds
batch | registry/opquery/match.go | if b < d.Batch.Min || b > d.Batch.Max { | if b > d.Batch.Max { | ./registry/opquery | TestBatchAndSpaceBounds
batch-inner-axis | registry/opquery/match.go | range t.Shape[1:] { | range t.Shape { | ./registry/opquery | TestBatchAndSpaceBounds
any-dtype | registry/opquery/match.go | if dts[0] != DTypeAny && !slices.Contains(dts, t.DType) { | if !slices.Contains(dts, t.DType) { | ./registry/opquery | TestAnyDType
any-dtype-e2e | registry/opquery/match.go | if dts[0] != DTypeAny && !slices.Contains(dts, t.DType) { | if !slices.Contains(dts, t.DType) { | ./registry/ops | TestAnyDTypeProvider
fit-tensor-copy | registry/opquery/match.go | f.Tensors[i] = t.Clone() | f.Tensors[i] = t | ./registry/opquery | TestFitTensorsAreCopies
resolve-copies-tensors | registry/opquery/match.go | f.Tensors[i] = t.Clone() | f.Tensors[i] = t | ./registry/ops | TestResolveCopiesQuery
execute-alignment | registry/ops/handle.go | align > 0 && t.Offset%align != 0 { | false { | ./registry/ops | TestExecuteAlignment
handle-serializes | registry/ops/handle.go | func (h *Handle) Execute(ctx context.Context, a Args) error {\n\tdefer h.lock()() | func (h *Handle) Execute(ctx context.Context, a Args) error { | ./registry/ops | TestHandleSerializes
max-version-inclusive | registry/module/graph.go | v.Compare(d.hi) > 0 { | v.Compare(d.hi) >= 0 { | ./registry/module | TestMaxVersionInclusive
max-version-removed | registry/module/graph.go | if d.MaxVersion != "" && v.Compare(d.hi) > 0 { | if false { | ./registry/module | TestMaxVersionInclusive
install-os-arch | registry/module/store.go | if m.OS != runtime.GOOS || m.Arch != runtime.GOARCH { | if m.OS != runtime.GOOS { | ./registry/module | TestInstallRefusesOtherHost
install-os | registry/module/store.go | if m.OS != runtime.GOOS || m.Arch != runtime.GOARCH { | if m.Arch != runtime.GOARCH { | ./registry/module | TestInstallRefusesOtherHost
provided-op-undeclared | registry/module/manifest.go | \t\tif !declared[id] { | \t\tif false { | ./registry/module | TestProvidedOpsMatchOperations
execute-buffer-lifetime | registry/ops/handle.go | if err := arena.CheckTensor(t); err != nil { | if err := arena.CheckTensor(t); false && err != nil { | ./registry/ops | TestExecuteBufferLifetime
execute-scratch-lifetime | registry/ops/handle.go | if err := arena.CheckLive(*sc.buf); err != nil { | if err := arena.CheckLive(*sc.buf); false && err != nil { | ./registry/ops | TestExecuteBufferLifetime
arena-generation | registry/worker/mailbox/shm.go | if got, ok := a.live[b.Off]; !ok || got.gen != b.gen { | if _, ok := a.live[b.Off]; !ok { | ./registry/worker/mailbox | TestArenaLifetime
sim-args-strides | registry/worker/child/sim.go | binary.LittleEndian.PutUint32(h[20:], sizeofArgsV11) | binary.LittleEndian.PutUint32(h[20:], 0) | ./registry/ops | TestStridedExecution
frame-strides | registry/worker/mailbox/frame.go | for _, v := range [][]uint64{t.Shape, t.Strides} { | for _, v := range [][]uint64{t.Shape, nil} { | ./registry/ops | TestStridedExecution
execute-strides | registry/ops/handle.go | if neg := w.EffectiveStrides(); !slices.Equal(got, neg) { | if neg := w.EffectiveStrides(); false && !slices.Equal(got, neg) { | ./registry/ops | TestStridedExecution
install-kernel-abi | registry/module/store.go | if err := m.CheckKernelABI(); err != nil { | if err := m.CheckKernelABI(); false && err != nil { | ./registry/module | TestKernelABIRange
load-kernel-abi | registry/module/store.go | if err := m.Manifest.CheckKernelABI(); err != nil { | if err := m.Manifest.CheckKernelABI(); false && err != nil { | ./registry/ops | TestKernelABIAtLoad
kernel-abi-overlap | registry/module/manifest.go | hhi.less(nlo) || nhi.less(hlo) | hhi.less(nlo) || (nhi.less(hlo) && false) | ./registry/module | TestKernelABIRange
param-version | registry/opquery/match.go | if p.Version != s.Version { | if false { | ./registry/opquery | TestParams
param-version-ops | registry/opquery/match.go | if p.Version != s.Version { | if false { | ./registry/ops | TestOperationParameters
param-scalars | registry/ops/handle.go | Scalars: slices.Clone(h.choice.scalars)} | Scalars: make([]uint64, len(h.choice.scalars))} | ./registry/ops | TestOperationParameters
service-offered-set | registry/worker/child/opservice.go | if !p.consumers[opCaller] { | if false { | ./registry/ops | TestHostServiceRunner
service-scratch-args | registry/worker/child/opservice.go | int(nt) != want || | int(nt) < len(oh.tensors) || | ./registry/ops | TestHostServiceRunner
service-budget | registry/worker/child/opservice.go | q.DeviceBudget = int64(binary.LittleEndian.Uint64(t[88:])) | q.DeviceBudget = -1 | ./registry/ops | TestHostServiceRunner
service-params | registry/worker/child/opservice.go | \t\tq.Params = append(q.Params, p)\n | \n | ./registry/ops | TestHostServiceParams
service-params-execute | registry/worker/child/opservice.go | \tif len(scalars) == 0 {\n\t\treturn args, cmem{}, nil | \tif true {\n\t\treturn args, cmem{}, nil | ./registry/ops | TestHostServiceParams
service-params-type | registry/opquery/types.go | if p.Type != typ { | if false { | ./registry/ops | TestHostServiceParams
query-params-tail | registry/worker/child/negotiate.go | binary.LittleEndian.PutUint32(q[28:], uint32(len(a.Params))) | binary.LittleEndian.PutUint32(q[28:], 0) | ./registry/ops | TestOperationParameters
negotiate-params | registry/ops/service.go | Params: negotiateParams(d.Params, ch.scalars)} | } | ./registry/ops | TestOperationParameters
table-descriptor-mismatch | registry/table.go | if descriptorDigest != h.Digest() { | if false { | ./registry | TestTargetTableDescriptorMismatch
table-refcount | registry/table.go | \t\te.refs++\n | \n | ./registry | TestTargetTableRefcount
table-resolve-during-cleanup | registry/table.go | \tdelete(t.identity, h)\n\tt.tombstones[h] = slot\n\tt.mu.Unlock()\n\n\tif t.onFree != nil {\n\t\tt.onFree(slot, h)\n\t}\n | \tt.tombstones[h] = slot\n\tt.mu.Unlock()\n\n\tif t.onFree != nil {\n\t\tt.onFree(slot, h)\n\t}\n\tt.mu.Lock()\n\tdelete(t.identity, h)\n\tt.mu.Unlock()\n | ./registry | TestTargetTableReleaseOrder
module-pin-check | registry/module/pins.go | \t\tif !ok {\n\t\t\tf.Close() | \t\tif false && !ok {\n\t\t\tf.Close() | ./registry/module | TestPinBlocksChanges
TABLE
)

status=0
fields=$(python3 -c '
import sys
for line in sys.stdin.read().splitlines():
    if line.strip():
        f = [x.strip() for x in line.split(" | ")]
        if len(f) != 6:
            sys.exit("bad table line: " + line)
        print("\x1f".join(f))
' <<<"$table")
while IFS=$'\x1f' read -r name file old new pkg run; do
	if [ -n "$only" ] && ! [[ $name =~ $only ]]; then
		continue
	fi
	cp "$work/$file" "$work/$file.orig"
	if ! python3 - "$work/$file" "$old" "$new" <<'PY'
import codecs, sys
path, old, new = sys.argv[1], codecs.decode(sys.argv[2], "unicode_escape"), codecs.decode(sys.argv[3], "unicode_escape")
text = open(path).read()
if text.count(old) != 1:
    sys.exit("%s: the text to mutate occurs %d times" % (path, text.count(old)))
open(path, "w").write(text.replace(old, new))
PY
	then
		echo "BROKEN   $name: the text to mutate is not in $file exactly once"
		status=1
	elif ! (cd "$work" && go vet "$pkg" >/dev/null 2>&1); then
		echo "BROKEN   $name: the mutation of $file does not compile"
		status=1
	elif (cd "$work" && go test -count=1 -v -run "^($run)\$" "$pkg" >"$work/out.txt" 2>&1); then
		if grep -q '^=== RUN' "$work/out.txt"; then
			echo "SURVIVED $name: $pkg -run '$run' passes with $file mutated"
		else
			echo "BROKEN   $name: $pkg has no test matching '$run'"
		fi
		status=1
	else
		failed=$(grep -o -- '--- FAIL: [A-Za-z0-9_/]*' "$work/out.txt" | head -3 | sed 's/--- FAIL: //' | paste -sd, -)
		echo "killed   $name: $pkg ${failed:-$(grep -m1 -E 'panic|fatal' "$work/out.txt" || echo failed)}"
	fi
	mv "$work/$file.orig" "$work/$file"
done <<<"$fields"
exit $status
