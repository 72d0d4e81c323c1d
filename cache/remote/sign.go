package remote

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/ptojit/ptojit/cache"
)

// Signed entries. A writer with Config.SigningKey stores, beside each
// entry, its signature object
//
//	ptojit:2:s:<key hex>   "PJS1", the 32-byte ed25519 public key, the
//	                       64-byte signature of sigDomain, the key's 32
//	                       bytes and the entry's stored bytes
//
// written before the entry (each is one write). A reader with
// Config.Trust reads both in the same round trip and serves the entry
// only when the signature is valid and its key is trusted: anything else
// is an *UntrustedError, a miss counted as untrusted. The entry is left
// alone (another reader may trust its writer). Blobs need no signature:
// the signed entry names each by its SHA-256.
const (
	sigMagic  = "PJS1"
	sigDomain = "ptojit remote entry signature v1\x00"
	sigBytes  = len(sigMagic) + ed25519.PublicKeySize + ed25519.SignatureSize
)

func sigKey(k cache.Key) string { return entryPrefix + "s:" + hex.EncodeToString(k[:]) }

func sigMessage(key cache.Key, enc []byte) []byte {
	m := make([]byte, 0, len(sigDomain)+len(key)+len(enc))
	m = append(m, sigDomain...)
	m = append(m, key[:]...)
	return append(m, enc...)
}

// signEntry returns the signature object of the entry of key stored as
// enc.
func signEntry(priv ed25519.PrivateKey, key cache.Key, enc []byte) []byte {
	b := make([]byte, 0, sigBytes)
	b = append(b, sigMagic...)
	b = append(b, priv.Public().(ed25519.PublicKey)...)
	return append(b, ed25519.Sign(priv, sigMessage(key, enc))...)
}

// KeyString is the text form of an ed25519 public key ("ed25519:" and
// the base64 of its bytes), as ptojit module keygen prints it.
func KeyString(k ed25519.PublicKey) string {
	return "ed25519:" + base64.StdEncoding.EncodeToString(k)
}

// UntrustedError is an entry refused because it carries no valid
// signature of a trusted key. It is a miss to a caller.
type UntrustedError struct {
	Key cache.Key
	// Signer is the signing key's text form, "" when unsigned.
	Signer string
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("remote: untrusted entry %s: %s", e.Key, e.Reason)
}

// Is reports whether target is ErrMiss or cache.ErrMiss.
func (e *UntrustedError) Is(target error) bool { return target == ErrMiss || target == cache.ErrMiss }

// checkSignature verifies sig (nil: none stored) for the entry of key
// stored as enc against trust.
func checkSignature(trust []ed25519.PublicKey, key cache.Key, enc, sig []byte) error {
	if sig == nil {
		return &UntrustedError{Key: key, Reason: "unsigned (remote_trust is set)"}
	}
	if len(sig) != sigBytes || !bytes.Equal(sig[:len(sigMagic)], []byte(sigMagic)) {
		return &UntrustedError{Key: key, Reason: "its signature object is malformed"}
	}
	pub := ed25519.PublicKey(sig[len(sigMagic) : len(sigMagic)+ed25519.PublicKeySize])
	signer := KeyString(pub)
	if !ed25519.Verify(pub, sigMessage(key, enc), sig[len(sigMagic)+ed25519.PublicKeySize:]) {
		return &UntrustedError{Key: key, Signer: signer, Reason: "the signature of " + signer + " does not match the entry"}
	}
	if !slices.ContainsFunc(trust, func(k ed25519.PublicKey) bool { return k.Equal(pub) }) {
		return &UntrustedError{Key: key, Signer: signer, Reason: "signed by " + signer + ", which remote_trust does not list"}
	}
	return nil
}
