package tiers

import (
	"strings"
	"testing"

	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/registry/module"
)

// TestSettingAndKeys reads the remote setting from the settings in force,
// names the settings file's keys when it is wrong, and reads trust.
func TestSettingAndKeys(t *testing.T) {
	if _, ok, err := Of(config.Resolve(nil, func(string) string { return "" })); ok || err != nil {
		t.Fatalf("no remote setting: ok %v, %v", ok, err)
	}
	env := map[string]string{"PTOJIT_REMOTE": "redis://127.0.0.1:1"}
	rs, ok, err := Of(config.Resolve(nil, func(k string) string { return env[k] }))
	if !ok || err != nil || len(rs.cfgs) != 1 {
		t.Fatalf("Of = %+v, %v, %v", rs, ok, err)
	}
	env["PTOJIT_REMOTE"] = "ftp://x"
	if _, _, err := Of(config.Resolve(nil, func(k string) string { return env[k] })); err == nil {
		t.Error("an ftp remote was taken")
	}
	_, pub, err := module.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseTrust(pub.String())
	if err != nil || len(keys) != 1 {
		t.Errorf("ParseTrust(%s) = %v, %v", pub, keys, err)
	}
	if _, err := ParseTrust("relative/trust.json"); err == nil {
		t.Error("a relative trust file was taken")
	}
	if k, err := ReadSigningKey(""); k != nil || err != nil {
		t.Errorf("ReadSigningKey(\"\") = %v, %v", k, err)
	}
	if _, err := ReadSigningKey("/nonexistent/key"); err == nil || !strings.Contains(err.Error(), "remote_signing_key") {
		t.Errorf("a missing key file: %v", err)
	}
}
