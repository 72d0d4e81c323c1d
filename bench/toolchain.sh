#!/bin/sh
# Toolchain identity benchmarks, every contender side by side in one run.
#
# BenchmarkSideBySide interleaves, in each iteration: a cold Capture of a
# generated 20,000-file installation, a warm (memoized) Capture, the
# PTO-ISA exact check on a 5,000-file checkout, `git status --porcelain
# --ignored` on the same checkout, and reading that checkout's contents; it
# reports the median of each and the median per-iteration ratio check/git.
# BenchmarkCapture/warm measures the memoized capture alone (ns/op).
#
# COUNT and BENCHTIME tune the run (defaults: 3 runs of 15 iterations).
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'SideBySide|Capture/warm' \
	-count "${COUNT:-3}" -benchtime "${BENCHTIME:-15x}" ./toolchain

# BenchmarkFirstIdentity: the first identity of the example toolchain (its
# host compiler included) under the build and the content policy, side by
# side in each iteration, and the median ratio content/build.
go test -run '^$' -bench 'FirstIdentity' -count 1 -benchtime "${FIRST_BENCHTIME:-10x}" ./toolchain

# BenchmarkBuildFallback: the build policy's content fallback on a
# 5,000-file root keeping its records (what a relocated digest needs)
# beside the same read with DigestOnly, alternating, with the median ratio
# records/digest-only, and the relocation of its digest under a base.
go test -run '^$' -bench 'BuildFallback' -count "${COUNT:-3}" -benchtime "${BENCHTIME:-15x}" ./toolchain

# BenchmarkFirstIdentityClang: the same first identity with gcc and with
# clang-19 as the host compilers, under both policies, interleaved, and the
# median ratios clang/gcc (skipped without clang-19).
go test -run '^$' -bench 'FirstIdentityClang' -count 1 -benchtime "${FIRST_BENCHTIME:-10x}" ./toolchain
