package module

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteFuzzCorpus writes the committed seed corpora when
// PTOJIT_UPDATE_GOLDEN=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("PTOJIT_UPDATE_GOLDEN") != "1" {
		t.Skip("set PTOJIT_UPDATE_GOLDEN=1 to rewrite testdata/fuzz")
	}
	good, _ := testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"}, dep("example.base", "1.0.0", "")).Marshal()
	manifests := map[string]string{
		"valid":         string(good),
		"unknown_field": `{"package_id":"a","version":"1.0.0","publisher":"p","module_abi":1,"runtime":"r","platforms":["a5"],"os":"linux","arch":"amd64","artifacts":[],"provided_ops":[],"extra":1}`,
		"duplicate":     `{"package_id":"a","package_id":"b"}`,
		"bad_abi_tag":   `{"package_id":"a","version":"1.0.0","publisher":"p","module_abi":1,"runtime":"r","platforms":["a5"],"os":"linux","arch":"amd64","artifacts":[],"provided_ops":[],"module_dependencies":[{"module_id":"b","min_version":"1.0.0","abi_tag":"guild.module.v1"}]}`,
		"abi2":          `{"package_id":"a","version":"1.0.0","publisher":"p","module_abi":2,"runtime":"r","platforms":["a5"],"os":"linux","arch":"amd64","artifacts":[],"provided_ops":[]}`,
		"operations":    `{"package_id":"a","version":"1.0.0-rc.1+b","publisher":"p","module_abi":1,"runtime":"r","platforms":["a5"],"os":"linux","arch":"amd64","artifacts":[],"provided_ops":["x"],"operations":[{"impl_id":"x","n":1.5,"l":[null,true]}]}`,
	}
	archives := map[string][]byte{
		"valid":     testPack(t, testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"}), testKey("acme")),
		"unsigned":  testPack(t, testManifest(t, "example.scan", "1.0.0", "org.acme", []string{"example.scan.v1"}), nil),
		"traversal": rawTar(t, tarEntry{name: "../x", body: "x"}),
		"symlink":   rawTar(t, tarEntry{name: "l", link: "/etc"}),
		"dup":       rawTar(t, tarEntry{name: "a", body: "1"}, tarEntry{name: "a", body: "2"}),
	}
	write := func(fuzzer, name string, b []byte) {
		d := filepath.Join("testdata", "fuzz", fuzzer)
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n, m := range manifests {
		write("FuzzParseManifest", n, []byte(m))
	}
	for n, a := range archives {
		write("FuzzReadArchive", n, a)
	}
}
