// Package module implements ptojit's runtime modules: signed packages of
// chip callables, a trust store, a dependency graph validated before
// anything is loaded, and a crash-safe module store.
//
// # Package format
//
// A package (.ptomodule) is an uncompressed ustar archive written by
// WriteArchive: one regular-file entry per name, names sorted, mode 0644,
// uid/gid 0, empty owner names, mtime 0, no directory entries, the standard
// two zero blocks at the end. ReadArchive refuses any archive that is not
// byte-identical to the canonical re-serialization of its entries, so no
// byte (header, padding, trailer) can change unnoticed. Directory sources
// (ReadDir) and archives go through the same hardened extraction: names are
// relative, slash-separated, valid UTF-8, without "", "." or ".."
// components, backslashes, control characters, or a file that is also a
// directory of another name; only regular files (no links, devices, FIFOs,
// directory entries); no duplicates; at most MaxEntries files, MaxFileSize
// bytes each, MaxPackageSize in all. The error names the offending entry.
//
// A package holds module.json (the manifest, in the canonical rendering of
// Manifest.Marshal, byte for byte), module.sig (the signature) and the
// artifacts the manifest lists, nothing else.
//
// # Manifest schema (module.json)
//
// A JSON object; unknown fields, duplicate fields and missing required
// fields are refused with an error naming the field:
//
//	package_id           string, required: dotted identifier ([a-z0-9_-]+ components joined by ".")
//	version              string, required: semantic version (semver 2.0.0)
//	publisher            string, required: dotted identifier; must be a publisher the signing key is trusted for
//	module_abi           integer, required: 1 (anything else is refused): the module format, which
//	                     every runtime dependency edge requires of its target
//	kernel_abi           {min, max}, optional (1.0..1.0): the inclusive range of sim kernel ABI
//	                     versions (ptojit_sim.h), each "MAJOR.MINOR" within one major, that the
//	                     callables work with; a package whose range shares no version with the
//	                     host's (HostKernelABI: every minor version of this build's major up to its
//	                     own) is refused at install and at load (*KernelABIError, naming both)
//	runtime              string, required: the simpler runtime the callables are built for
//	platforms            [string], required: of a2a3sim, a5sim, a2a3, a5
//	os, arch             string, required: GOOS/GOARCH of the host the callables run on
//	description          string, optional
//	artifacts            [{path, size, sha256}], required: every file of the package besides
//	                     module.json and module.sig; sha256 in lowercase hex
//	provided_ops         [string], required: implementation ids; must equal the impl_ids of operations
//	operations           [object], optional: operation descriptors (package registry/ops defines
//	                     them). This package reads "impl_id" (string, required) and "callables"
//	                     ([{platform, artifact, hashid}], one per platform; the artifact must be listed
//	                     and its ChipCallable hashid must equal hashid); the rest is carried through
//	                     and signed.
//	module_dependencies  [{module_id, min_version, max_version?, abi_tag, publisher_id?, sha256?}],
//	                     optional: inclusive version bounds; abi_tag must be "ptojit.module.v1";
//	                     publisher_id pins the dependency's publisher, sha256 the digest of its
//	                     canonical unsigned manifest.
//
// # Canonical payload, digest and signature
//
// The canonical unsigned manifest (Manifest.Payload) is the inventory
// encoding of the tuple ("ptojit.module.manifest", D), where D is a dict of
// the manifest's fields with their JSON names: strings as str, integers as
// int, lists as list, artifacts and dependencies as dicts, operations as
// the plain-JSON reading of each descriptor (inventory.ParseJSON). Absent
// optional fields (description, kernel_abi, operations, module_dependencies, and
// max_version, publisher_id, sha256 of an edge) are left out, so adding an
// optional field never changes an old payload. The package digest is the
// lowercase hex SHA-256 of the payload. module.sig is
//
//	{"key": "ed25519:<base64 public key>", "signature": "<base64 ed25519 signature of the payload>"}
//
// indented by two spaces, with a final newline. A private key file is the
// line "ptojit module private key v1" and the line "ed25519:<base64 seed>".
//
// # Trust
//
// The trust store (trust.json in the store) lists which keys sign for which
// publishers, and revoked keys, publishers and package digests. Install
// refuses unsigned packages, bad signatures, revoked digests, keys and
// publishers, unknown publishers, and a manifest whose publisher is not one
// the signing key is trusted for. There is no switch that turns this off.
//
// Trust is checked again every time a module's native code could run:
// Enable and Rollback refuse a module whose publisher, signing key or
// package digest is revoked (*RevokedError, naming the revocation), and the
// operation service (package registry/ops) calls CheckLoad on the trust
// store as committed before every activation and when it binds a handle.
// TrustRevoke disables, in the same transaction, every enabled module the
// revocation revokes and every enabled module depending on one of them,
// and returns them; it does not wait for pins, so handles already open
// keep working until they are released. Trust.Revocation says what revokes
// an installed module ("publisher P", "key K", "package DIGEST").
//
// # Store and lifecycle transaction
//
// The store directory holds state.json (installed versions, which one is
// enabled per module, rollback history), trust.json, the lock file and
// packages/<digest>.ptomodule. Every change (install, replace by a newer
// version, enable, disable, remove, rollback, trust changes) is one
// transaction under the store lock, which records its holder (pid, host,
// user, time) so that a waiting or failing process names it: the change is
// computed on a copy of the state (stage), the package is verified, the
// whole graph is validated as it would be after the change, new package
// files and then state.json are written durably (temporary file, fsync,
// rename, directory fsync: package filesys/durable), and only then does
// the new state become visible in memory (expose); package files the change
// dropped are removed last. state.json is the single commit point, so a
// crash leaves the old or the new state, and the next Open (or change)
// removes temporary and unreferenced package files. A failed write leaves
// the in-memory state untouched.
//
// A change reads state.json and trust.json again after it takes the lock,
// so changes of several processes (or of several Stores of one directory)
// are serialized: none works on a state another has replaced. The lock and
// pin files are opened without following symbolic links and created with
// mode 0600 (package filesys/flock). A pin (Store.Pin) is a shared flock
// on pins/ID.lock; the first pin of a module creates that file under the
// store lock, so a change deciding under the lock which modules are pinned
// cannot miss it.
//
// An install also activates the package when the Store has an
// Options.Activate hook (ptojit's command layer always supplies one): after
// the graph validation and before any write, the package's callables run in
// a child worker, which checks the implementation ids their native code
// reports against provided_ops and runs their module init and shutdown
// (package registry/ops, ActivateModule). A failed activation aborts the
// install like any other refusal: nothing is written. Enable and Rollback
// activate the version they enable the same way, against the modules
// enabled after them.
//
// Versions are immutable: installing an id and version already present
// with another manifest digest is refused; the identical package is a
// no-op. Installing a version newer than the enabled one enables it and
// disables the previous one (rollback re-enables that).
//
// # Graph
//
// Before anything is loaded, every edge of every enabled module must reach
// an enabled module with module_abi 1 whose version is within the bounds
// and that matches the publisher and digest pins; there may be no cycle,
// and no implementation id may be provided by two enabled modules. Errors
// (GraphError) name both modules, the edge and the reason. The load order
// is topological, dependencies first, ties by id. Disabling or removing a
// module that an enabled module depends on is refused and names the
// dependents (ProtectedError).
//
// # Tests
//
// TestCrash kills a child process at every step of install, replace,
// remove and the other changes and checks that the store reopens in the
// old or the new state and verifies. By default it runs the short
// schedule; PTOJIT_MODULE_CRASH=full runs the full schedule (every step of
// a longer sequence of changes, several hundred runs).
package module
