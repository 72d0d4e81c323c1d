package tiers

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/registry/module"
)

// The variables of remote_signing_key and remote_trust.
const (
	SigningKeyVariable = "PTOJIT_REMOTE_SIGNING_KEY"
	TrustVariable      = "PTOJIT_REMOTE_TRUST"
)

// maxKeyFile bounds a key or trust file read for the remote tier.
const maxKeyFile = 1 << 20

// Open opens the tiers of rs: each signs with remote_signing_key and
// trusts remote_trust's keys; getenv is where the S3 tiers' credentials
// come from; warn hears each tier's warnings with its target. In the
// daemon (daemon set) each tier also warns once that it is unauthenticated
// when a key or the trust is missing.
func Open(rs Setting, getenv func(string) string, daemon bool, warn func(target, msg string)) (*remote.Chain, error) {
	priv, err := ReadSigningKey(rs.signingKey)
	if err != nil {
		return nil, err
	}
	trust, err := ParseTrust(rs.trust)
	if err != nil {
		return nil, err
	}
	cfgs := slices.Clone(rs.cfgs)
	for i := range cfgs {
		target := cfgs[i].Target.String()
		cfgs[i].Warn = func(msg string) { warn(target, msg) }
		cfgs[i].SigningKey, cfgs[i].Trust, cfgs[i].Getenv = priv, trust, getenv
		cfgs[i].WarnUnauthenticated = daemon
	}
	return remote.NewChain(cfgs)
}

// ReadSigningKey reads the private key file of remote_signing_key ("": no
// key). The key itself never appears in an error.
func ReadSigningKey(file string) (ed25519.PrivateKey, error) {
	if file == "" {
		return nil, nil
	}
	b, err := readKeyFile(file)
	if err != nil {
		return nil, fmt.Errorf("remote_signing_key: %w", err)
	}
	priv, err := module.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("remote_signing_key: %s: %v", file, err)
	}
	return priv, nil
}

func readKeyFile(file string) ([]byte, error) {
	if !filepath.IsAbs(file) {
		return nil, fmt.Errorf("%q is not an absolute path", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, maxKeyFile)
	}
	return b, nil
}

// ParseTrust reads remote_trust: whitespace-separated public keys
// (ed25519:...) and absolute paths of trust files in the module store's
// format (their keys, less the revoked ones). "" is nil: no trust
// configured.
func ParseTrust(v string) ([]ed25519.PublicKey, error) {
	items := strings.Fields(v)
	if len(items) == 0 {
		return nil, nil
	}
	keys := []ed25519.PublicKey{}
	for _, it := range items {
		if strings.HasPrefix(it, "ed25519:") {
			k, err := module.ParsePublicKey(it)
			if err != nil {
				return nil, fmt.Errorf("remote_trust: %v", err)
			}
			keys = append(keys, ed25519.PublicKey(k))
			continue
		}
		fk, err := trustFileKeys(it)
		if err != nil {
			return nil, fmt.Errorf("remote_trust: %w", err)
		}
		keys = append(keys, fk...)
	}
	return keys, nil
}

// trustFileKeys returns the keys a module trust file trusts.
func trustFileKeys(file string) ([]ed25519.PublicKey, error) {
	b, err := readKeyFile(file)
	if err != nil {
		return nil, err
	}
	var t struct {
		Keys []struct {
			Key string `json:"key"`
		} `json:"keys"`
		RevokedKeys []string `json:"revoked_keys"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: not a trust file: %v", file, err)
	}
	var keys []ed25519.PublicKey
	for i, k := range t.Keys {
		if slices.Contains(t.RevokedKeys, k.Key) {
			continue
		}
		pk, err := module.ParsePublicKey(k.Key)
		if err != nil {
			return nil, fmt.Errorf("%s: keys[%d]: %v", file, i, err)
		}
		keys = append(keys, ed25519.PublicKey(pk))
	}
	return keys, nil
}

// CredentialWarning is the warning of a request to the daemon whose S3
// credential variables differ from the daemon's own, which the daemon
// uses: it names the variables, never their values. "" when they agree.
func CredentialWarning(rs Setting, request, daemon func(string) string) string {
	if !slices.ContainsFunc(rs.cfgs, func(c remote.Config) bool { return c.Target.S3 != nil }) {
		return ""
	}
	var differ []string
	for _, v := range remote.CredentialVariables {
		if request(v) != daemon(v) {
			differ = append(differ, v)
		}
	}
	if len(differ) == 0 {
		return ""
	}
	return fmt.Sprintf("remote cache: this request's %s differ from the daemon's; the daemon's S3 credentials are used (restart it from this environment to use these: ptojit daemon stop)", strings.Join(differ, ", "))
}
