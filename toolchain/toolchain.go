package toolchain

import (
	"fmt"
	"os"
	"strings"

	"github.com/ptojit/ptojit/inventory"
)

// Policy selects what evidence identifies an installation. A value, safe
// for concurrent use.
type Policy string

const (
	// PolicyContent reads every file of every installation: proofs of
	// contents.
	PolicyContent Policy = "content"
	// PolicyBuild uses PyPTO's build records: GNU build-ids, source
	// revisions, pins and versions, claims a build makes about itself
	// (the default, as in PyPTO).
	PolicyBuild Policy = "build"
)

// PolicyEnv is the environment variable that selects the policy, as in
// PyPTO.
const PolicyEnv = "PYPTO_CACHE_IDENTITY"

// EpochEnv is the environment variable whose value is folded into every
// build-policy identity, so that changing it forces new keys.
const EpochEnv = "PYPTO_CACHE_EPOCH"

// DefaultPolicy is the policy when nothing names one: PyPTO's default.
const DefaultPolicy = PolicyBuild

// ParsePolicy returns the policy named s; "" is DefaultPolicy.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case "":
		return DefaultPolicy, nil
	case PolicyContent:
		return PolicyContent, nil
	case PolicyBuild:
		return PolicyBuild, nil
	}
	return "", fmt.Errorf("unknown identity policy %q (want %q or %q)", s, PolicyContent, PolicyBuild)
}

// Component names, in the order of every list of components.
const (
	Pypto           = "pypto"
	Runtime         = "runtime"
	PtoIsa          = "pto_isa"
	Ptoas           = "ptoas"
	DeviceToolchain = "device_toolchain"
)

// Names lists the five components in order.
var Names = [5]string{Pypto, Runtime, PtoIsa, Ptoas, DeviceToolchain}

// ComponentInputs is the resolved inventory of one component. It starts
// unavailable, even when roots or some of its file paths are known: only
// the adapter that has established the component's complete dependency set
// marks it complete, and Reason reports NotProven until then. Values are
// plain data: safe for concurrent reads, not for concurrent writes.
type ComponentInputs struct {
	// Roots are read (content policy) unless VerifiedRevision is set.
	Roots []inventory.ContentRoot
	// UnavailableReason, when non-empty, outranks everything else: the
	// component has no identity.
	UnavailableReason string
	// VerifiedRevision is a revision some other mechanism proved the bytes
	// to be in this same resolution (PTO-ISA only).
	VerifiedRevision string
	// ReportedVersion is what the installation says about itself, verified
	// by nothing (ptoas --version, CANN innerversion, compiler --version).
	ReportedVersion string
	// FallbackReason says why the version an installation states does not
	// identify it and its contents do instead (CANN: no info file, two, an
	// empty value, an unrecognised layout); "" otherwise.
	FallbackReason string

	// build is the build-policy record resolution found, nil when the
	// component is identified by its contents under that policy too.
	build *buildSpec

	// complete is set only by the adapters of this package, once they
	// have accounted for the whole component.
	complete bool
}

// NotProven is the reason of inputs no adapter has proven complete.
const NotProven = "inventory not proven complete: no dependency-aware adapter accounted for the component"

// Reason returns why the component has no identity: UnavailableReason
// when set, else NotProven unless an adapter proved the inputs complete;
// "" when they are usable.
func (ci *ComponentInputs) Reason() string {
	switch {
	case ci.UnavailableReason != "":
		return ci.UnavailableReason
	case !ci.complete:
		return NotProven
	}
	return ""
}

// Complete reports whether an adapter proved the inputs complete.
func (ci *ComponentInputs) Complete() bool { return ci.complete && ci.UnavailableReason == "" }

// proven returns ci marked complete: called by an adapter only once it has
// accounted for every input of the component.
func proven(ci ComponentInputs) ComponentInputs {
	ci.complete = ci.UnavailableReason == ""
	return ci
}

// Unavailable returns inputs that are unavailable for reason.
func Unavailable(reason string) ComponentInputs {
	return ComponentInputs{UnavailableReason: reason}
}

// ToolchainInputs is the resolved inventory of the five components, and the
// tools the compilation path must run: resolved by the same code that
// identified them, so the build uses exactly what the identity describes.
// Safe for concurrent reads.
type ToolchainInputs struct {
	Pypto, Runtime, PtoIsa, Ptoas, DeviceToolchain ComponentInputs

	// HostCC and HostCXX are the absolute paths of the host C and C++
	// compiler drivers on sim platforms ("" otherwise, or when none was
	// found).
	HostCC, HostCXX string
	// PtoasLauncher is the absolute path of the ptoas launcher, "" if none.
	PtoasLauncher string
	// Policy is the identity policy the inputs were resolved for.
	Policy Policy
	// Epoch is PYPTO_CACHE_EPOCH at resolution (build policy only), and
	// EpochSet whether it was set at all: PyPTO records an unset epoch as
	// None and an empty one as "".
	Epoch    string
	EpochSet bool
}

// Component returns the inputs of the component called name, or nil.
func (t *ToolchainInputs) Component(name string) *ComponentInputs {
	switch name {
	case Pypto:
		return &t.Pypto
	case Runtime:
		return &t.Runtime
	case PtoIsa:
		return &t.PtoIsa
	case Ptoas:
		return &t.Ptoas
	case DeviceToolchain:
		return &t.DeviceToolchain
	}
	return nil
}

// Config selects the installations Resolve inspects. Empty roots fall back
// to the environment (PTOAS_ROOT, ASCEND_HOME_PATH, PTO_ISA_ROOT). Safe for
// concurrent reads.
type Config struct {
	// Policy; "" reads PYPTO_CACHE_IDENTITY, whose default is build.
	Policy Policy
	// Platform is a2a3sim, a5sim, a2a3 or a5.
	Platform string

	PyptoRoot   string
	RuntimeRoot string
	PtoIsaRoot  string
	// PtoIsaPin is the full commit id PTO-ISA must be at to be identified
	// by revision.
	PtoIsaPin string
	// PtoIsaURL, when set, makes Resolve call EnsurePtoIsaRoot: a checkout
	// that is missing or not exactly at the pin is cloned again from here.
	PtoIsaURL string
	PtoasRoot string
	CannRoot  string
	// DeviceRoots are extra roots the device toolchain declares; they are
	// read under every policy, whatever version the installation reports.
	DeviceRoots []string

	// Environ is the environment of the compilation path; probes of tools
	// run with it. Nil means the process environment.
	Environ []string
	// Getenv reads one variable; nil reads Environ.
	Getenv func(string) string
	// ToolResolutionVar, when set, says which variables of Environ may
	// change what a resolution finds: the environment registry's
	// tool_resolution variables and those it does not classify.
	// (*InstallationIdentityCache).Resolve keys its memo by those alone
	// (beyond the variables the adapters read by name), so that a new
	// value of any other one, a semantic variable whose value a build's
	// key holds anyway, reuses the resolution. Nil: every variable.
	ToolResolutionVar func(name string) bool
}

func (c *Config) environ() []string {
	if c.Environ != nil {
		return c.Environ
	}
	return os.Environ()
}

func (c *Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	env := c.environ()
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// ComponentIdentity is the identity of one component: its digest and the
// evidence it was computed from, or the reason it has none. Safe for
// concurrent reads.
type ComponentIdentity struct {
	Name string
	// Digest is zero when Unavailable is set.
	Digest inventory.Sum
	// Evidence is the dict the digest covers (nil when unavailable). It is
	// shared with the cache's memo: read it, do not modify it.
	Evidence inventory.Dict
	// Unavailable is the reason the component has no identity, "" if it
	// has one.
	Unavailable string
	// ContentRoots are the root records of the content evidence (nil
	// without one): a build key that writes paths relative to a base
	// directory recomputes the content digest from them. Shared with the
	// memo like Evidence.
	ContentRoots inventory.List
	// Files and Bytes count what was read for the content evidence.
	Files int
	Bytes int64
	// Record says whose record the build policy's evidence digests
	// (RecordPyPTO, RecordContents, RecordClang); "" under the content
	// policy.
	Record string

	// build is the build-policy record the reported version digests (nil
	// under the content policy): RelocatedBuildDigest reads it. Shared
	// with the memo like Evidence.
	build *buildRecord
}

// Whose record a build-policy identity digests: PyPTO's _build_identity
// record, byte for byte, or one ptojit adds where PyPTO has none.
const (
	RecordPyPTO    = "pypto"
	RecordContents = "ptojit-content" // the component's contents (build.go)
	RecordClang    = clangTag         // a clang driver among the compilers (buildclang.go)
)

// Identity is the identity of a whole toolchain. Safe for concurrent reads.
type Identity struct {
	// Usable reports whether all five components have a digest.
	Usable bool
	// Digest is the toolchain digest; zero unless Usable.
	Digest inventory.Sum
	Policy Policy
	// Components are the five, in the order of Names.
	Components []ComponentIdentity
}

// Reasons lists "name: reason" for every unavailable component.
func (id *Identity) Reasons() []string {
	var out []string
	for _, c := range id.Components {
		if c.Unavailable != "" {
			out = append(out, c.Name+": "+c.Unavailable)
		}
	}
	return out
}

// ComponentDigest returns digest(("component", name, evidence)).
func ComponentDigest(name string, evidence inventory.Dict) (inventory.Sum, error) {
	return inventory.Digest(inventory.T(inventory.Str("component"), inventory.Str(name), evidence))
}

// ToolchainDigest returns digest(("toolchain", 1, {name: hex})) over the
// five component digests, in the order of Names.
func ToolchainDigest(components [5]inventory.Sum) inventory.Sum {
	d := inventory.Dict{}
	for i, n := range Names {
		d[inventory.Str(n)] = inventory.Str(components[i].String())
	}
	return inventory.MustDigest(inventory.T(inventory.Str("toolchain"), inventory.IntOf(1), d))
}
