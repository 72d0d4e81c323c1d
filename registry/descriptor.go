package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Kind is a callable kind, with the descriptor's callable_kind values.
type Kind uint32

// Kinds.
const (
	ChipCallableKind     Kind = 1
	PythonSerializedKind Kind = 2
)

// String returns "CHIP_CALLABLE", "PYTHON_SERIALIZED" or "Kind(N)".
func (k Kind) String() string {
	switch k {
	case ChipCallableKind:
		return "CHIP_CALLABLE"
	case PythonSerializedKind:
		return "PYTHON_SERIALIZED"
	}
	return fmt.Sprintf("Kind(%d)", uint32(k))
}

// Namespace is a target namespace: the resolver domain of a handle.
type Namespace string

// Local namespaces.
const (
	LocalChip   Namespace = "LOCAL_CHIP"
	LocalPython Namespace = "LOCAL_PYTHON"
)

// NamespaceOf returns the namespace that resolves kind: LOCAL_CHIP for
// CHIP_CALLABLE, LOCAL_PYTHON for PYTHON_SERIALIZED, else
// CALLABLE_KIND_UNSUPPORTED.
func NamespaceOf(kind Kind) (Namespace, error) {
	switch kind {
	case ChipCallableKind:
		return LocalChip, nil
	case PythonSerializedKind:
		return LocalPython, nil
	}
	return "", newError(CallableKindUnsupported, "namespace", "%v", kind)
}

// Descriptor and signature schema versions.
const (
	DescriptorSchemaVersion       = 1
	SignatureSchemaVersion        = 1
	SPYCVersion                   = 1
	SerializerCloudpickle   uint8 = 1
	SPYCHeaderSize                = 16
	SPYCMagic                     = "SPYC"
)

// Platforms lists the platforms: two simulators (a2a3sim, a5sim), whose
// callables are built with the host compiler and run on the host, and two
// devices (a2a3, a5), built with the CANN compiler.
var Platforms = []string{"a2a3sim", "a5sim", "a2a3", "a5"}

// The version of the sim kernel ABI (ptojit_sim.h: PTOJIT_SIM_ABI_VERSION
// and PTOJIT_SIM_ABI_MINOR) that this build's chip children provide. Minor
// versions only add size-prefixed tails, so they also run binaries built
// for every earlier minor version of the same major.
const (
	SimABIMajor = 1
	SimABIMinor = 3
)

// IsSim reports whether platform is one of the simulator platforms.
func IsSim(platform string) bool { return platform == "a2a3sim" || platform == "a5sim" }

var platformArch = map[string]string{
	"a2a3": "a2a3", "a2a3sim": "a2a3",
	"a5": "a5", "a5sim": "a5",
}

// TargetArch returns the architecture directory of a platform: "a2a3" for
// a2a3 and a2a3sim, "a5" for a5 and a5sim; any other platform is
// PLATFORM_UNSUPPORTED.
func TargetArch(platform string) (string, error) {
	if a, ok := platformArch[platform]; ok {
		return a, nil
	}
	return "", newError(PlatformUnsupported, "target arch", "platform %q (want a2a3, a2a3sim, a5 or a5sim)", platform)
}

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendBytes(b, v []byte) []byte { return append(appendU32(b, uint32(len(v))), v...) }

func appendStr(b []byte, s string) []byte { return append(appendU32(b, uint32(len(s))), s...) }

// SignatureSchema returns the CHIP_SIGNATURE_SCHEMA_V1 bytes of sig:
// u32(1), u32(len(sig)), then u32 per direction.
func SignatureSchema(sig []Direction) []byte {
	b := make([]byte, 0, 8+4*len(sig))
	b = appendU32(b, SignatureSchemaVersion)
	b = appendU32(b, uint32(len(sig)))
	for _, d := range sig {
		b = appendU32(b, uint32(d))
	}
	return b
}

// SignatureSchemaHash returns sha256(SignatureSchema(sig)).
func SignatureSchemaHash(sig []Direction) [32]byte { return sha256.Sum256(SignatureSchema(sig)) }

// BuildChipDescriptor returns the CHIP_CALLABLE descriptor from its parts,
// without looking at a blob (the platform must still be known and the
// runtime non-empty).
func BuildChipDescriptor(platform, runtime string, blobSHA256, signatureSchemaHash [32]byte) ([]byte, error) {
	arch, err := TargetArch(platform)
	if err != nil {
		return nil, err
	}
	if runtime == "" {
		return nil, newError(PlatformUnsupported, "chip descriptor", "empty runtime name")
	}
	b := make([]byte, 0, 4*7+len(arch)+len(platform)+len(runtime)+64)
	b = appendU32(b, DescriptorSchemaVersion)
	b = appendU32(b, uint32(ChipCallableKind))
	b = appendStr(b, arch)
	b = appendStr(b, platform)
	b = appendStr(b, runtime)
	b = appendBytes(b, blobSHA256[:])
	b = appendBytes(b, signatureSchemaHash[:])
	return b, nil
}

// ChipDescriptor validates blob as a ChipCallable (ParseChipCallable's
// rules), decodes its signature and returns the CHIP_CALLABLE descriptor for
// platform and runtime.
func ChipDescriptor(platform, runtime string, blob []byte) ([]byte, error) {
	if _, err := TargetArch(platform); err != nil {
		return nil, err
	}
	sig, err := ChipSignature(blob)
	if err != nil {
		return nil, err
	}
	return BuildChipDescriptor(platform, runtime, sha256.Sum256(blob), SignatureSchemaHash(sig))
}

// ChipHashid returns the hashid of blob for platform and runtime.
func ChipHashid(platform, runtime string, blob []byte) (Hashid, error) {
	d, err := ChipDescriptor(platform, runtime, blob)
	if err != nil {
		return Hashid{}, err
	}
	return ComputeHashid(d), nil
}

// SPYCHeader is the 16-byte header of a Python callable payload.
type SPYCHeader struct {
	Version     uint8
	Serializer  uint8
	Flags       uint16
	PayloadSize uint64
}

// ParseSPYC splits a SPYC envelope into its header and the serializer output
// (an alias of b). The header must be magic "SPYC", version 1, serializer 1,
// flags 0, and a payload size equal to the bytes after the header; anything
// else is SPYC_PAYLOAD_INVALID.
func ParseSPYC(b []byte) (*SPYCHeader, []byte, error) {
	const op = "parse spyc"
	bad := func(format string, args ...any) (*SPYCHeader, []byte, error) {
		return nil, nil, newError(SPYCPayloadInvalid, op, format, args...)
	}
	if len(b) < SPYCHeaderSize {
		return bad("payload is %d bytes, shorter than the %d-byte header", len(b), SPYCHeaderSize)
	}
	if string(b[:4]) != SPYCMagic {
		return bad("magic %q, want %q", b[:4], SPYCMagic)
	}
	h := &SPYCHeader{
		Version:     b[4],
		Serializer:  b[5],
		Flags:       binary.LittleEndian.Uint16(b[6:]),
		PayloadSize: binary.LittleEndian.Uint64(b[8:]),
	}
	switch {
	case h.Version != SPYCVersion:
		return bad("version %d, want %d", h.Version, SPYCVersion)
	case h.Serializer != SerializerCloudpickle:
		return bad("serializer %d, want %d (cloudpickle)", h.Serializer, SerializerCloudpickle)
	case h.Flags != 0:
		return bad("flags %#x, want 0", h.Flags)
	case h.PayloadSize != uint64(len(b)-SPYCHeaderSize):
		return bad("header says %d payload bytes, %d present", h.PayloadSize, len(b)-SPYCHeaderSize)
	}
	return h, b[SPYCHeaderSize:], nil
}

// AppendSPYC appends a version-1 cloudpickle SPYC envelope of payload to b.
func AppendSPYC(b, payload []byte) []byte {
	b = append(b, SPYCMagic...)
	b = append(b, SPYCVersion, SerializerCloudpickle, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	return append(b, payload...)
}

// BuildPythonDescriptor returns the PYTHON_SERIALIZED descriptor from its
// parts.
func BuildPythonDescriptor(formatVersion uint32, serializer uint32, payloadSHA256 [32]byte) []byte {
	b := make([]byte, 0, 4*5+32)
	b = appendU32(b, DescriptorSchemaVersion)
	b = appendU32(b, uint32(PythonSerializedKind))
	b = appendU32(b, formatVersion)
	b = appendU32(b, serializer)
	return appendBytes(b, payloadSHA256[:])
}

// PythonDescriptor parses a SPYC envelope and returns its PYTHON_SERIALIZED
// descriptor: the header's version and serializer and the SHA-256 of the
// inner payload (not of the header).
func PythonDescriptor(spyc []byte) ([]byte, error) {
	h, payload, err := ParseSPYC(spyc)
	if err != nil {
		return nil, err
	}
	return BuildPythonDescriptor(uint32(h.Version), uint32(h.Serializer), sha256.Sum256(payload)), nil
}

// PythonHashid returns the hashid of a SPYC envelope.
func PythonHashid(spyc []byte) (Hashid, error) {
	d, err := PythonDescriptor(spyc)
	if err != nil {
		return Hashid{}, err
	}
	return ComputeHashid(d), nil
}

// Descriptor returns the descriptor of a payload of the given kind: a
// ChipCallable blob (with platform and runtime) or a SPYC envelope (platform
// and runtime ignored). Targets use it to recompute the descriptor from a
// staged payload before install.
func Descriptor(kind Kind, platform, runtime string, payload []byte) ([]byte, error) {
	switch kind {
	case ChipCallableKind:
		return ChipDescriptor(platform, runtime, payload)
	case PythonSerializedKind:
		return PythonDescriptor(payload)
	}
	return nil, newError(CallableKindUnsupported, "descriptor", "%v", kind)
}
