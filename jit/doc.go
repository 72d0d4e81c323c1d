// Package jit is ptojit's build driver: a build request (package api) goes
// through identity, cache lookup, compilation and publication, and comes
// back as a ChipCallable blob with its callable hashid. A Driver is safe for
// concurrent use; the daemon wraps one and calls Driver.Build per request.
//
// # Key
//
// The key is the SHA-256 of the canonical encoding (package inventory) of
// the key record
//
//	("ptojit.build", 1, {
//	  "policy":        "content" | "build",
//	  "platform":      str, "runtime": str,
//	  "pipeline":      {"version": "ptojit-sim/3"},
//	  "build":         {"orchestration": path, "orchestration_compile": [str...],
//	                    "function": str, "config": str,
//	                    "kernels": [{"func_id": int, "source": path, "signature": [int...],
//	                                 "compile": [str...]}...],
//	                    "signature": [int...], "scalar_count": int},
//	  "sources":       {"orchestration": hex, "kernel.<func_id>": hex, "extra_roots[i]": hex},
//	  "extra_sources": hex,
//	  "toolchain":     {"pypto": hex, "runtime": hex, "pto_isa": hex, "ptoas": hex, "device_toolchain": hex},
//	  "options":       record,
//	  "environment":   {NAME: str | None, ...},   every semantic variable of the registry
//	  "epoch":         str | None,                PYPTO_CACHE_EPOCH
//	})
//
// where each compile list is the unit's recipe as the compiler gets it
// (recipe.args: the language standard, the pipeline's flags, defines,
// include directories, forced includes and the request's flags), and each
// source digest is the content digest of that one root (so a
// key diff names the source that changed), extra_sources is
// inventory.FingerprintExtraSources of the request's extra sources and
// fingerprint, and the toolchain entries are the component digests of
// toolchain.Identity. An unavailable piece is None in the record and its
// reason is reported; such a record has no key.
//
// # Base directory
//
// Every path under the base directory (the request's base_dir, else
// PTOJIT_BASE_DIR, else the request's git work tree, else its directory)
// enters the record relative to it, as ccache's base_dir does: the paths of
// the build group and of the compile recipes' flags, header names, and the root and
// resolved paths inside the content records whose digests the sources,
// extra_sources and toolchain entries are, and, under the build policy,
// the paths in a component's build record and the digests over them
// (toolchain.ComponentIdentity.RelocatedBuildDigest). These digests are
// then not PyPTO's (`ptojit fingerprint` and `toolchain --json` print
// PyPTO's); KeyReport.Relative lists the paths made relative. Paths
// outside it stay absolute. The compilers run in the base
// directory with relative source and include names and
// -ffile-prefix-map=BASE=., so that no absolute path under it reaches an
// output: two checkouts at different paths share keys and outputs.
//
// The build is not looked up and not published ("uncached", every reason
// listed) when a component, source or extra source is unavailable, when a
// tool_resolution variable that no adapter identifies is set, or when a
// fresh_request variable is set (then it is not looked up either).
//
// # Headers (direct mode)
//
// Headers are not key inputs: the compiler names them (-MD -MF), as for
// ccache's direct mode. The entry stored under the key is a manifest: its
// one output, "manifest.json", is the JSON {"variants": [{"headers":
// [{"path", "digest"}...], "result": hex}...]}, most recent first, at most
// 16 and at most MaxManifestBytes (16 MiB; the oldest variants are dropped
// to fit, and a build whose variant alone is larger is not published). It
// is a blob like any output: verified when read, evicted with its entry,
// shared with a remote tier. Manifests written before were the entry's
// meta "manifest" and are still read. A daemon remembers decoded
// manifests by their digest (64 MiB of JSON at most), so its hit reads
// the manifest entry and no blob. A lookup re-hashes
// the headers of each variant and reads the result entry of the first that
// still matches: its key is the digest of ("ptojit.result", 1, key record,
// [(path, sha256 hex)...]), so a changed header can never select a stale
// result. Result entries hold the outputs and their record; the manifest is
// written after its result.
//
// A variant also records negative dependencies ("absent": paths). The
// compiler searches the include path in order: the including file's own
// directory for a quoted include (a .pto source's directory is passed as
// -iquote), the -I directories (the runtime's and PTO-ISA's include
// directories), then the system directories the compiler reports with -v.
// For every header found in one directory of that path under a name, each
// earlier directory joined with that name that did not exist at the build
// is recorded; a file created at any of them would be read instead, so its
// existence makes the variant not match, a miss whose reason names the
// file ("header appeared on the include path since the last build: ...").
// A candidate that existed at the build was skipped by the form of the
// include and is not recorded, unless it was not read and its times are
// within a second of the compile's start or later: it may have been
// created after the compiler searched its directory, so the build answers
// but publishes nothing ("not published: a header may have appeared on the
// include path while the compilers ran ..."). The searched places are checked once
// every compiler of the build has finished.
//
// Without a daemon each recorded path is checked with an lstat. A daemon
// answers them from directory listings its Watcher keeps (DirListings, set
// as Options.Listings): one memo per searched directory, its set of names,
// read only after every directory from the root down to it is watched
// (each before its child is looked at) and stored only if no event dropped
// it during the read; any event in the directory, or naming it or a
// directory above it, drops the memo, and the daemon's barrier before each
// request (Watcher.Sync) makes every change that finished before the
// request count. A directory that does not exist is remembered as empty
// while its nearest existing ancestor is watched. Paths through a symbolic
// link and directories that cannot be watched are checked with an lstat.
//
// A header is checked with a stat: its digest is re-hashed unless the
// header memo holds it under the file's device, inode, size, modification
// and status change times (taken only once those times are a second older
// than the read, git's racily-clean rule). A daemon checks a header that
// lies inside a content root of one of the key's toolchain components (the
// runtime's and PTO-ISA's include directories, the host compiler's system
// directories) through the same listings instead: the digest found by its
// last check holds while the listing of its directory that was current
// before that check still is, since a write, a mode change, a replacement
// or a rename of the file is an event in that directory. Only a regular
// file with one link is checked so, and only once the file itself is
// watched too: a write through another name, or through a hard link made
// later in a directory no watch covers, is no event in the header's
// directory, but it is one on the file's own watch (its inode's: the
// link count, then the write). The application's own headers, outside
// those roots, and its sources are stat-checked on every request. What
// the watches do not see, for every memo the Watcher keeps: a write
// through a shared memory mapping, and a file system mounted over a
// directory of the path.
//
// # Publication
//
// After the compile, every source is fingerprinted again and compared with
// its fingerprint from before the compile, and every header the compiler
// named is hashed; a source that changed, or a header whose modification or
// change time is not older than the compile's start less a clock slack of
// 20 ms (file times come from the kernel's coarse clock, which lags), prevents
// publication: its bytes after the compile may not be what the compiler
// read. Headers are known only from the compiler's own dependency output, so
// they cannot be hashed before the compile; their times are the evidence.
//
// Write-then-build is cached: a frontend writes its sources and headers and
// asks for the build at once. A header written just before the request
// would be too young for the rule above, so when an input known before the
// compile (a source or its directory, an extra root, an include directory,
// a header of the key's manifest) changed within 40 ms of the request,
// the compile starts no earlier than 20 ms after the request arrived: every
// file written before the request is then older than the compile's start
// less the slack and is taken, and a file written while the compilers run
// is still refused. The wait costs a miss at most 20 ms and a hit nothing.
// A header the build cannot know of beforehand, rewritten alone just
// before the first build of a key, can still make that build "uncached"
// (never stale); the next build publishes. The rule assumes file times
// finer than the slack (ext4, xfs, btrfs and tmpfs keep nanoseconds; FAT's
// 2 s would not do).
//
// Outputs are streamed to the request's output directory through a
// temporary file and a rename, their bytes checked against their digests
// as they are written, so the directory never holds a partial or corrupt
// output; a local hit's outputs stream from the store, never whole in
// memory. A miss's do not sit in memory either: each compiled object stays
// a file of its compile's build directory, hashed once, until the last
// build that received its flight's result is done with it (flightGroup
// then removes the directory); a unit found in its entry is read through
// the store's reader; the callable is packed from the objects' readers
// into a file (registry.WriteChipCallable: its layout depends only on the
// sizes); the store, the pack entry, the hashid and the output directory
// read them as streams. Only the remote tier, which takes outputs in
// memory, reads them whole. A Put whose output names a blob the store
// holds (a request entry's objects, which their unit entries hold) does
// not read it again.
//
// Every byte read from the store is verified, once. A local hit's Get
// counts the hit and updates the entry's last use but reads no blob;
// an output's bytes are read only when the build needs them, through the
// store's reader (cache.Hit), which checks them against the output's
// size and SHA-256 before handing any out (a chunked output chunk by
// chunk and as a whole); bytes that reader yields are not hashed again.
// Bytes from anywhere else (a fresh compile, the remote tier) are hashed
// as they are written and checked against their digests before the
// rename. An output already in place is not read from the store: a file
// of the output's size and mode whose SHA-256 is the output's digest
// holds it, and is left alone. The output memo spares even that read:
// it keeps, per path, the digest and mode of the bytes last found there
// by hashing the whole file, keyed by the file's device, inode, size, modification
// and status change times, and only once the file's modification time is
// older than the read by the racily-clean margin (git's rule), so any
// write or replacement since, even one that restores the modification
// time, sends the build back to hashing the file (and, when it differs,
// to the store's verified bytes). The chip
// callable's hashid is remembered by the blob's digest the same way; its
// blob is read (verified) only when that memo misses. Damage a reader
// finds is a damaged miss: the store removes the entry and counts it, and
// the build compiles.
//
// # Verify mode
//
// With Options.Verify (PTOJIT_CACHE_VERIFY=1 or the setting verify, like
// Go's GODEBUG=gocacheverify=1), every hit, local or remote, is also
// compiled afresh, in the daemon and without it, and each output is
// compared byte for byte with the stored one. A difference fails the
// build with a *VerifyError naming the key and, for each output that
// differs, its stored and fresh SHA-256; it is counted as verify_mismatch
// in the store's stats (cache.EventVerifyMismatch) and as an error. The
// fresh outputs are never published: the stored entry stays as it was, and
// nothing is written to the output directory. A difference while an input
// changed during the fresh compile (a source fingerprinted again, a header
// modified since the build began) proves nothing and is a warning. Outputs
// whose bytes may legitimately differ between two compiles are named in
// code (verifyMayDiffer, with the reason; none today) and are compared all
// the same, a difference being a warning. A remote hit is stored locally
// only once its fresh compile agreed with it, so a remote entry that fails
// verification never reaches the local store. Without verify a hit runs no
// compiler.
//
// # Remote tier
//
// With Options.Remote, a local miss looks the key up in the remote tier
// inside the compile flight: its manifest (whose record must be this key's),
// the first variant whose headers match here, and that variant's result
// (whose record must be the result record of this key and header set). A
// hit, verified by the tier, is stored locally and answered with hit_tier
// "remote": its outputs stream from the tier's hit (cache.NewHit, a chunk
// at a time) into the local store and, again, into the output directory,
// so no output is ever whole in memory (in verify mode the hit is read
// whole, as every verified hit is, and stored only once the fresh compile
// agreed). After a local publish the result and the manifest are queued
// for the remote tier. The remote tier's failures are misses: it fails no
// build.
//
// # Latest builds
//
// For every request identity the store holds the key and the header
// variant of its latest build, hit or miss (Driver.LatestBuild): the
// identity is the request's name field when it has one, else its file's
// path relative to the base directory (RequestIdentity); a request read
// from standard input without a name has none and is not recorded. The
// record is an entry without outputs, Meta {"kind": "latest", "request",
// "key", "result"} ("result" is the key of the variant's result entry, and
// "previous_key", "previous_result" those of the build before it, when one
// is recorded),
// stored under the digest of ("ptojit.latest", 1, "name"|"file", str),
// which is also its record, so it survives the daemon's exit. A build
// checks the record after answering and writes it only when the key or the
// variant changed; the process remembers what it found or wrote, and reads
// the record again at most once a minute while builds agree with it, so a
// hit of the recorded variant neither reads nor writes the store. Like
// other entries it is verified when read, listed by cache ls (kind
// "latest"), kept fresh by those reads for trimming (least-recently-used
// eviction may remove it, as cache clear does; the first build a minute
// later writes it again) and never sent to the remote tier; a
// record whose meta does not parse is damage, counted and removed. Two
// checkouts of a project share one record per request, as they share
// keys. ptojit key diff compares a stored key with a request through the
// variant of the request's latest build.
//
// # Sim pipeline
//
// On a2a3sim and a5sim the orchestration and each kernel are compiled, each
// on its own, by the host C (or C++, for .cc/.cpp/.cxx and .pto) compiler
// that toolchain.Resolve selected, with the flags of the key's pipeline,
// -I for the runtime's and PTO-ISA's include directories, into a shared
// object. A .pto source is first assembled by the resolved ptoas launcher
// ("ptoas SRC -o OUT.cpp"). The shared objects follow the C ABI of
// testdata/examples/toolchain/runtime/include/ptojit_sim.h and are packed
// into a ChipCallable (package registry). On a2a3 and a5 the kernels are
// compiled by CANN's ccec, which must be found under the CANN root.
//
// # Outputs
//
// orchestration.so, kernel_<func_id>.so for each kernel, and
// chip_callable.bin, the ChipCallable blob.
package jit
