package module

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/registry"
)

// PublicKey is an ed25519 public key.
type PublicKey ed25519.PublicKey

// keyPrefix starts the text form of a public key.
const keyPrefix = "ed25519:"

// privateKeyHeader is the first line of a private key file.
const privateKeyHeader = "ptojit module private key v1"

// String returns the key's text form, "ed25519:" + standard base64 of the
// 32 key bytes: what keygen prints and trust add takes.
func (k PublicKey) String() string { return keyPrefix + base64.StdEncoding.EncodeToString(k) }

// ParsePublicKey parses the text form of a public key.
func ParsePublicKey(s string) (PublicKey, error) {
	rest, ok := strings.CutPrefix(s, keyPrefix)
	if !ok {
		return nil, fmt.Errorf("public key %q does not start with %q", s, keyPrefix)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil || len(b) != ed25519.PublicKeySize || base64.StdEncoding.EncodeToString(b) != rest {
		return nil, fmt.Errorf("public key %q is not %s followed by the base64 of %d bytes", s, keyPrefix, ed25519.PublicKeySize)
	}
	return PublicKey(b), nil
}

// GenerateKey returns a new private key file's contents and its public key.
func GenerateKey() (privateFile []byte, pub PublicKey, err error) {
	p, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	return MarshalPrivateKey(priv), PublicKey(p), nil
}

// MarshalPrivateKey returns the private key file for priv: a header line
// and "ed25519:" + base64 of the 32-byte seed.
func MarshalPrivateKey(priv ed25519.PrivateKey) []byte {
	return []byte(privateKeyHeader + "\n" + keyPrefix + base64.StdEncoding.EncodeToString(priv.Seed()) + "\n")
}

// ParsePrivateKey reads a private key file.
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != privateKeyHeader {
		return nil, fmt.Errorf("not a ptojit module private key (want %q on the first line)", privateKeyHeader)
	}
	rest, ok := strings.CutPrefix(lines[1], keyPrefix)
	seed, err := base64.StdEncoding.Strict().DecodeString(rest)
	if !ok || err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("private key: the second line is not ed25519: followed by the base64 of a 32-byte seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// Signature is module.sig: the signing public key and the ed25519
// signature of the canonical unsigned manifest.
type Signature struct {
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

func (s *Signature) marshal() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

func parseSignature(b []byte) (*Signature, PublicKey, []byte, error) {
	var s Signature
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %v", SignatureName, err)
	}
	if !bytes.Equal(s.marshal(), b) {
		return nil, nil, nil, fmt.Errorf("%s: not in canonical form", SignatureName)
	}
	k, err := ParsePublicKey(s.Key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: key: %v", SignatureName, err)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(s.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, nil, nil, fmt.Errorf("%s: signature is not the base64 of %d bytes", SignatureName, ed25519.SignatureSize)
	}
	return &s, k, sig, nil
}

// Package is a read, self-consistent package: its manifest parsed and in
// canonical form, every artifact present with the size and sha256 the
// manifest lists, nothing else in it, and the callables' hashids right.
// The signature is checked against the payload; whether its key is
// trusted is the trust store's question (Trust.Check).
type Package struct {
	Manifest *Manifest
	// Payload is the canonical unsigned manifest; Digest its SHA-256 hex.
	Payload []byte
	Digest  string
	// Key is the signing key; it is nil only in the package OpenPackage
	// returns beside ErrUnsigned, which every caller but Pack (reading
	// back an archive it packed without a key) treats as a refusal.
	Key   PublicKey
	Files Files
}

// Artifact returns the bytes of an artifact.
func (p *Package) Artifact(path string) []byte { return p.Files[path] }

// ErrUnsigned is returned by OpenPackage for a package without module.sig.
var ErrUnsigned = errors.New("the package is unsigned (no " + SignatureName + "): every module must be signed (ptojit module pack --key)")

// OpenArchive reads and checks a .ptomodule archive (see Package).
func OpenArchive(b []byte) (*Package, error) {
	files, err := ReadArchive(b)
	if err != nil {
		return nil, err
	}
	return OpenPackage(files)
}

// OpenPackage checks the files of a package (see Package). An unsigned
// package is ErrUnsigned.
func OpenPackage(files Files) (*Package, error) {
	mb, ok := files[ManifestName]
	if !ok {
		return nil, fmt.Errorf("the package has no %s", ManifestName)
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	canon, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, mb) {
		return nil, fmt.Errorf("%s: not in canonical form (ptojit module pack writes it so; a package's bytes may not change)", ManifestName)
	}
	payload, err := m.Payload()
	if err != nil {
		return nil, err
	}
	p := &Package{Manifest: m, Payload: payload, Digest: sha256Hex(payload), Files: files}
	for _, a := range m.Artifacts {
		data, ok := files[a.Path]
		if !ok {
			return nil, fmt.Errorf("artifact %s: listed in %s but not in the package", a.Path, ManifestName)
		}
		if int64(len(data)) != a.Size {
			return nil, fmt.Errorf("artifact %s: %d bytes, the manifest says %d", a.Path, len(data), a.Size)
		}
		if h := sha256Hex(data); h != a.SHA256 {
			return nil, fmt.Errorf("artifact %s: sha256 %s, the manifest says %s", a.Path, h, a.SHA256)
		}
	}
	for name := range files {
		if name != ManifestName && name != SignatureName && !slices.ContainsFunc(m.Artifacts, func(a Artifact) bool { return a.Path == name }) {
			return nil, &EntryError{Name: name, Reason: "not listed in the manifest's artifacts"}
		}
	}
	for i, op := range m.Operations {
		for j, c := range op.Callables {
			w := fmt.Sprintf("operations[%d].callables[%d]", i, j)
			h, err := registry.ChipHashid(c.Platform, m.Runtime, files[c.Artifact])
			if err != nil {
				return nil, fieldErr(w+".artifact", "%s is not a chip callable: %v", c.Artifact, err)
			}
			if c.Hashid != h.String() {
				return nil, fieldErr(w+".hashid", "%q, but the callable %s has hashid %s", c.Hashid, c.Artifact, h)
			}
		}
	}
	sb, ok := files[SignatureName]
	if !ok {
		return p, ErrUnsigned
	}
	_, key, sig, err := parseSignature(sb)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(ed25519.PublicKey(key), payload, sig) {
		return nil, fmt.Errorf("%s: the signature of key %s does not verify over the manifest payload (the manifest or the signature was altered)", SignatureName, key)
	}
	p.Key = key
	return p, nil
}

// Pack returns the canonical signed archive of manifest m and its
// artifacts: it fills in each artifact's size and sha256 and each
// operation callable's hashid, validates the result and signs its payload
// with priv.
func Pack(m *Manifest, artifacts Files, priv ed25519.PrivateKey) ([]byte, *Package, error) {
	m2 := *m
	m2.Artifacts = nil
	names := make([]string, 0, len(artifacts))
	for n := range artifacts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m2.Artifacts = append(m2.Artifacts, Artifact{Path: n, Size: int64(len(artifacts[n])), SHA256: sha256Hex(artifacts[n])})
	}
	m2.Operations = nil
	for i, op := range m.Operations {
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(op.Raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if cs, ok := v["callables"].([]any); ok {
			for j, c := range cs {
				cm, _ := c.(map[string]any)
				if cm == nil {
					continue
				}
				art, _ := cm["artifact"].(string)
				plat, _ := cm["platform"].(string)
				blob, ok := artifacts[art]
				if !ok {
					return nil, nil, fieldErr(fmt.Sprintf("operations[%d].callables[%d].artifact", i, j), "%q was not built or given", art)
				}
				h, err := registry.ChipHashid(plat, m.Runtime, blob)
				if err != nil {
					return nil, nil, fieldErr(fmt.Sprintf("operations[%d].callables[%d]", i, j), "%v", err)
				}
				cm["hashid"] = h.String()
			}
		}
		raw, _ := json.Marshal(v)
		nop, err := parseOperation(raw, fmt.Sprintf("operations[%d]", i))
		if err != nil {
			return nil, nil, err
		}
		m2.Operations = append(m2.Operations, nop)
	}
	if err := m2.Validate(); err != nil {
		return nil, nil, err
	}
	mb, err := m2.Marshal()
	if err != nil {
		return nil, nil, err
	}
	files := Files{ManifestName: mb}
	for n, b := range artifacts {
		files[n] = b
	}
	if priv != nil {
		payload, err := m2.Payload()
		if err != nil {
			return nil, nil, err
		}
		sig := &Signature{
			Key:       PublicKey(priv.Public().(ed25519.PublicKey)).String(),
			Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, payload)),
		}
		files[SignatureName] = sig.marshal()
	}
	ar, err := WriteArchive(files)
	if err != nil {
		return nil, nil, err
	}
	p, err := OpenArchive(ar)
	if err != nil && !(priv == nil && errors.Is(err, ErrUnsigned)) {
		return nil, nil, fmt.Errorf("the packed archive does not read back: %w", err)
	}
	return ar, p, nil
}
