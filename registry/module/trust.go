package module

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Trust is the trust store: which keys sign for which publishers, and what
// is revoked. A key may sign for several publishers and a publisher may
// have several keys. Not safe for concurrent use; the Store guards it.
type Trust struct {
	Keys              []TrustedKey `json:"keys"`
	RevokedKeys       []string     `json:"revoked_keys"`
	RevokedPublishers []string     `json:"revoked_publishers"`
	RevokedPackages   []string     `json:"revoked_packages"`
}

// TrustedKey trusts Key to sign for Publisher.
type TrustedKey struct {
	Publisher string `json:"publisher"`
	Key       string `json:"key"`
}

func parseTrust(b []byte) (*Trust, error) {
	t := &Trust{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		return nil, fmt.Errorf("trust store %s: %v", trustFile, err)
	}
	return t, nil
}

func (t *Trust) marshal() []byte {
	c := *t
	for _, l := range []*[]string{&c.RevokedKeys, &c.RevokedPublishers, &c.RevokedPackages} {
		if *l == nil {
			*l = []string{}
		}
	}
	if c.Keys == nil {
		c.Keys = []TrustedKey{}
	}
	b, _ := json.MarshalIndent(&c, "", "  ")
	return append(b, '\n')
}

func (t *Trust) clone() *Trust {
	return &Trust{Keys: slices.Clone(t.Keys), RevokedKeys: slices.Clone(t.RevokedKeys),
		RevokedPublishers: slices.Clone(t.RevokedPublishers), RevokedPackages: slices.Clone(t.RevokedPackages)}
}

// add trusts key for publisher.
func (t *Trust) add(publisher string, key PublicKey) error {
	if !validID(publisher) {
		return fmt.Errorf("publisher %q is not a dotted identifier", publisher)
	}
	ks := key.String()
	if slices.Contains(t.RevokedKeys, ks) {
		return fmt.Errorf("key %s is revoked; a revoked key cannot be trusted again", ks)
	}
	if slices.Contains(t.RevokedPublishers, publisher) {
		return fmt.Errorf("publisher %s is revoked; a revoked publisher cannot be trusted again", publisher)
	}
	tk := TrustedKey{Publisher: publisher, Key: ks}
	if !slices.Contains(t.Keys, tk) {
		t.Keys = append(t.Keys, tk)
		slices.SortFunc(t.Keys, func(a, b TrustedKey) int {
			return strings.Compare(a.Publisher+"\x00"+a.Key, b.Publisher+"\x00"+b.Key)
		})
	}
	return nil
}

func addSorted(l *[]string, s string) {
	if !slices.Contains(*l, s) {
		*l = append(*l, s)
		slices.Sort(*l)
	}
}

// Check decides whether a package with manifest publisher, signed by key,
// with payload digest, may be installed.
func (t *Trust) Check(publisher string, key PublicKey, digest string) error {
	ks := key.String()
	switch {
	case slices.Contains(t.RevokedPackages, digest):
		return fmt.Errorf("package digest %s is revoked", digest)
	case slices.Contains(t.RevokedKeys, ks):
		return fmt.Errorf("the signing key %s is revoked", ks)
	case slices.Contains(t.RevokedPublishers, publisher):
		return fmt.Errorf("publisher %s is revoked", publisher)
	}
	var keyFor []string
	publisherKnown := false
	for _, k := range t.Keys {
		if k.Key == ks {
			if k.Publisher == publisher {
				return nil
			}
			keyFor = append(keyFor, k.Publisher)
		}
		if k.Publisher == publisher {
			publisherKnown = true
		}
	}
	switch {
	case len(keyFor) > 0:
		return fmt.Errorf("the manifest's publisher %s differs from the signing key's publisher (%s is trusted for %s only)", publisher, ks, strings.Join(keyFor, ", "))
	case publisherKnown:
		return fmt.Errorf("the signing key %s is not trusted for publisher %s", ks, publisher)
	}
	return fmt.Errorf("unknown publisher %s: no trusted key (ptojit module trust add %s KEY)", publisher, publisher)
}

// RevokedError is a module whose native code may not run: its publisher,
// its signing key or its package digest is revoked. Enable, Rollback and
// the operation service's activations refuse such a module with it.
type RevokedError struct {
	Module string // package_id@version
	Kind   string // "publisher", "key" or "package"
	Value  string // the publisher, the key or the manifest digest revoked
}

func (e *RevokedError) Error() string {
	what := map[string]string{"publisher": "publisher", "key": "signing key", "package": "package digest"}[e.Kind]
	return fmt.Sprintf("module %s: %s %s is revoked (ptojit module trust ls)", e.Module, what, e.Value)
}

// Revocation returns what revokes m, as "publisher P", "key K" or "package
// DIGEST", or "" when nothing does.
func (t *Trust) Revocation(m *Installed) string {
	if e := t.revoked(m); e != nil {
		return e.Kind + " " + e.Value
	}
	return ""
}

func (t *Trust) revoked(m *Installed) *RevokedError {
	switch {
	case slices.Contains(t.RevokedPackages, m.Digest):
		return &RevokedError{Module: m.ID(), Kind: "package", Value: m.Digest}
	case slices.Contains(t.RevokedKeys, m.Key):
		return &RevokedError{Module: m.ID(), Kind: "key", Value: m.Key}
	case slices.Contains(t.RevokedPublishers, m.Publisher):
		return &RevokedError{Module: m.ID(), Kind: "publisher", Value: m.Publisher}
	}
	return nil
}

// loadable decides whether the native code of the installed module m may
// run under t: nothing of it revoked (*RevokedError) and its key still
// trusted for its publisher.
func (t *Trust) loadable(m *Installed) error {
	if e := t.revoked(m); e != nil {
		return e
	}
	key, err := ParsePublicKey(m.Key)
	if err != nil {
		return fmt.Errorf("module %s: %w", m.ID(), err)
	}
	if err := t.Check(m.Publisher, key, m.Digest); err != nil {
		return fmt.Errorf("module %s: %w", m.ID(), err)
	}
	return nil
}
