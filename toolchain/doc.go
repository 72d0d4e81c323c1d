// Package toolchain identifies the five installations every PTO build depends
// on — pypto, runtime, pto_isa, ptoas and device_toolchain, in that order —
// and memoizes their identity. Of ptojit it imports inventory and registry
// (for the platforms).
//
// # Inputs
//
// Resolve runs one adapter per component and returns ToolchainInputs: for
// each component a ComponentInputs (content roots, an unavailable reason, an
// optional verified revision, an optional reported version), plus the exact
// tools the compilation path must run (HostCC, HostCXX, Ptoas). Every
// component starts unavailable, even when its roots are known: Reason is
// NotProven until the adapter that has accounted for the whole component
// marks it complete, and Capture gives an unproven component no digest. An
// existing empty directory as a required root is unavailable, and so is a
// component whose roots hold no file once read: an empty required
// installation inventory is unavailable.
//
//   - pypto: the PyPTO root, every file (not python-only: the package ships
//     its native extension beside its Python sources, and both are imported
//     code), plus the native libraries its shared objects load from outside
//     it: every ELF shared object under the root (found by content, not
//     name) goes through the dependency walk of the host compiler adapter
//     (ldd in the compilation path's environment). A library not found,
//     or LD_PRELOAD or LD_AUDIT set, makes the component unavailable.
//   - runtime: the runtime root, every file, and its native libraries as
//     for pypto.
//   - pto_isa: verified_revision = the pin, when HEAD == pin and the worktree
//     holds exactly the pinned tree (see CheckPtoIsa); otherwise the root's
//     contents.
//   - ptoas: the launcher selected by the explicit root or PTOAS_ROOT;
//     reported_version is its complete --version output, and the content
//     roots are the launcher and, for an ELF launcher, the shared
//     libraries it loads (ldd): a local build of PTOAS from any commit
//     prints "ptoas 0.27", so the version alone cannot tell two builds
//     apart. A failed probe falls back to the root's contents; no root is
//     unavailable.
//   - device_toolchain: on a2a3/a5 the CANN installation (explicit root or
//     ASCEND_HOME_PATH): reported_version "innerversion=<v>" (or
//     "version=<v>") from the one ascend_toolkit_install.info the root
//     reaches (at the root or in its x86_64-linux, aarch64-linux or
//     arm64-linux directory), else the whole root's contents with
//     fallback_reason saying why (no info file, two distinct ones, an
//     empty value, an unrecognised install layout); declared roots are read in
//     every case, and so are the host-side files the compiler driver ccec
//     loads from outside the installation, found by asking ccec (the first
//     of compiler/ccec_compiler/bin/ccec, compiler/bin/ccec,
//     *-linux/ccec_compiler/bin/ccec, bin/ccec under the root, else ccec on
//     PATH) exactly as the sim platforms ask gcc, below. No ccec, a failed
//     probe, or a tool resolution variable set makes it unavailable. On a2a3sim/a5sim the host C and C++ compilers (CC/CXX, else
//     cc/c++ on PATH): reported_version holds both complete --version texts,
//     and the roots are the drivers and everything they report
//     (-print-prog-name=cc1|cc1plus|as|ld, the install and program
//     directories of -print-search-dirs, the link inputs -print-file-name
//     names, the include search list of -E -v, and the shared libraries
//     ldd lists for the drivers and programs). LD_PRELOAD, LD_AUDIT,
//     GCC_EXEC_PREFIX or COMPILER_PATH set makes it unavailable.
//
// # Identity records
//
// Under the content policy a component's evidence is a Dict with any of
//
//	verified_revision  Str  (only pto_isa; its roots are then not read)
//	reported_version   Str  (ptoas, device_toolchain; both have content too)
//	fallback_reason    Str  (device_toolchain read by content: why its version was not used)
//	content            Str  64 lowercase hex of inventory.Fingerprint(roots).Digest
//
// and its digest is digest(("component", name, evidence)). A component with
// an unavailable reason, an unreadable root, or no evidence at all has no
// digest. The toolchain digest is
//
//	digest(("toolchain", 1, {name: component digest as 64 hex}))
//
// and exists only when all five components have one.
//
// Under the build policy (PYPTO_CACHE_IDENTITY=build) the evidence is
// PyPTO's: {"reported_version": digest(("build-identity-v1", epoch, value))},
// epoch None when PYPTO_CACHE_EPOCH is unset and its value, "" included,
// when set. A file in a value is NativeBuildID's ("gnu-build-id", hex) or
// ("sha256", hex); the values are PyPTO's _build_identity records:
//
//   - pypto: ([(package dir, PythonSources)], pypto_core*.so path,
//     evidence, sys.version, cache tag), the interpreter python3 on the
//     compilation path's PATH (None, None without one; None, None for a
//     package without a native extension, which PyPTO cannot import).
//   - runtime, for a git checkout (.git a directory or a file): (HEAD, root,
//     simpler sources, simpler_setup sources, _task_interface*.so path,
//     evidence, build/lib/pto_isa_build.json bytes or None). The checkout
//     must be clean as PyPTO asks git: git status --porcelain=v1
//     --untracked-files=all prints nothing (ignored files do not count, an
//     untracked one does), else "Runtime source checkout has uncommitted
//     changes".
//   - pto_isa: the pin (Config.PtoIsaPin, else the runtime's pto_isa.pin),
//     when the checkout is verified at it.
//   - ptoas: a standalone ELF launcher is (real path, evidence). A pip or
//     uv console script ("#!/.../python..." and an installer's shim for
//     ptoas._cli:main) is (launcher, its sha256, interpreter, sha256 of the
//     ptoas-*.dist-info/METADATA, [(path, evidence)] of the package's
//     _core*.so, (numpy package, sha256 of its dist-info's METADATA, WHEEL
//     and RECORD), (startup .pth hooks, [(module, path)] loaded at startup
//     from outside the standard library, sys.path, [(path, sha256)] of
//     hooks and modules)), the package, NumPy and startup evidence as the
//     launcher's interpreter reports them without importing ptoas. A
//     launcher naming a Python interpreter that is not such a script is
//     unavailable ("Unsupported PTOAS launcher for build identity").
//   - device_toolchain on sim platforms: [record(cc), record(c++)], a
//     compiler's record (invoked path, --version text, the invoked file's
//     evidence, the evidence of the driver the first COLLECT_GCC names in
//     -E -x c++ -v, [(program, real path, evidence)] for
//     -print-prog-name=cc1plus, collect2, as, ld). The invoked file and
//     the programs must be ELF files. A driver other than the invoked file
//     is accepted behind ccache only, and only when ccache --show-config
//     sets none of compiler, path, prefix_command, prefix_command_cpp.
//     A clang driver (named clang, or whose --version says clang where no
//     COLLECT_GCC is reported) has ptojit's record instead, which PyPTO
//     has none of ("ptojit-clang", see buildclang.go and clang.go).
//   - device_toolchain on a2a3/a5: [record(the host C++ compiler), (ccec's
//     real path, the build its installation states), (ld.lld's real path,
//     evidence)], ccec and ld.lld from <root>/bin (else
//     <root>/tools/bisheng_compiler/bin), the build the innerversion (else
//     version) of the one <cann>/*/ascend_toolkit_install.info when ccec
//     lies at <cann>/tools/bisheng_compiler/bin/ccec, else unavailable
//     ("CANN installation build version is unavailable"); a root with ccec
//     in neither place is read by its contents. Which compiler
//     PyPTO's runtime selects for orchestration there is its own choice;
//     ptojit records the host C++ compiler (CXX, else c++).
//
// Where PyPTO would have no identity because the installation lacks what
// it reads (a runtime that is not a checkout, an unverified pin), or
// where it would refuse an installation ptojit can still read (a ptoas
// launcher that is a shell script, such as the example's), the value is
// ("ptojit-content", content digest[, reported version]): the component's
// contents, a proof rather than a claim. No content-policy evidence has
// that tag, so the two policies never share a component digest, and so
// never a toolchain digest.
//
// NativeBuildID reads exactly what PyPTO reads: the PT_NOTE program
// headers of a 64-bit ELF file. It deliberately does not read more (note
// sections, 32-bit files, broken section tables are read PyPTO's way), so
// that every build-policy file record equals PyPTO's.
//
// # Memoization
//
// InstallationIdentityCache memoizes component identities by their complete
// resolved inventory, and (*InstallationIdentityCache).Resolve memoizes
// resolutions by their complete Config and the variables of the
// environment that can change tool resolution (Config.ToolResolutionVar:
// a new semantic value, such as a new epoch under the content policy,
// reuses the resolution). Options.BeforeDir
// reports every directory whose change must drop a memo, before anything in
// it is listed or read (the daemon's watcher then watches the directory and
// each regular file in it, so that a write through another name of a file
// drops the memo too): a file read through symlinks names the directory of
// each symlink on the way and the one that holds the file; Forget drops
// them.
//
// # Reading git
//
// CheckPtoIsa and EnsurePtoIsaRoot read git with go-git where it does well
// enough and with a reader of their own where it does not, as
// BenchmarkGitReaders (go test -bench GitReaders ./toolchain) measures on a
// 5,000-file checkout, every reader in turn in each iteration:
//
//   - go-git: opening the repository, HEAD, the commit and its tree id
//     (0.3 ms in all), every tree object, loose or packed, and the clone
//     and checkout of EnsurePtoIsaRoot. Trees are read through go-git's
//     storer, then their bytes are hashed and compared with the id, which
//     go-git does not do (gittree.go). This replaced a hand-written loose
//     object reader: go-git with the check takes 1.2-1.3x its time on
//     loose trees (8.1 ms against 6.5 ms, two runs) and 1.1-1.2x on packed
//     ones (where the old reader failed an open per tree before asking
//     go-git), but it checks the ids of packed trees too, which the old
//     reader left unchecked, and the trees are read while the worktree
//     walk, which takes longer, runs beside them: in one run of
//     BenchmarkSideBySide the whole check took 1.02x `git status
//     --porcelain --ignored` on the loose checkout (0.99-1.18x with the
//     old reader) and 1.61x on the packed one (0.60-1.56x with the old
//     reader, which did not check packed ids).
//   - our own: the index (gitindex.go). go-git's index decoder takes 8.7-9.3x
//     the time of parseIndex (10.2 ms against 1.2 ms for 5,000 entries)
//     and accepts a split index, which the check cannot vouch for.
//
// go-git is linked by the engine only; the client (cmd/ptojit) never
// imports this package.
package toolchain
