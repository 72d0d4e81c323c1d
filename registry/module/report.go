package module

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ptojit/ptojit/filesys/durable"
)

// StoreDir returns the module store directory: flag, else
// PTOJIT_MODULE_DIR, else $XDG_DATA_HOME/ptojit/modules, else
// ~/.local/share/ptojit/modules (getenv reads the environment; abs
// resolves a relative path as the command's working directory does).
func StoreDir(flag string, getenv func(string) string, abs func(string) string) (string, error) {
	if flag != "" {
		return abs(flag), nil
	}
	if d := getenv("PTOJIT_MODULE_DIR"); d != "" {
		return abs(d), nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ptojit", "modules"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "ptojit", "modules"), nil
	}
	return "", errors.New("no module store: set --module-dir, PTOJIT_MODULE_DIR, XDG_DATA_HOME or HOME")
}

// WriteNewKey writes a new private key to path (0600; never over an
// existing file, name is path as typed) and returns its public key.
func WriteNewKey(path, name string) (PublicKey, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("module keygen: %s exists; a key is never overwritten", name)
	}
	priv, pub, err := GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := durable.WriteFile(path, priv, 0o600); err != nil {
		return nil, fmt.Errorf("module keygen: %w", err)
	}
	return pub, nil
}

// Info is an installed module as module ls, show and graph print it in
// JSON.
type Info struct {
	PackageID    string       `json:"package_id"`
	Version      string       `json:"version"`
	Publisher    string       `json:"publisher"`
	Enabled      bool         `json:"enabled"`
	Digest       string       `json:"digest"`
	Key          string       `json:"key"`
	ProvidedOps  []string     `json:"provided_ops"`
	Dependencies []Dependency `json:"module_dependencies"`
	// Revoked says what revokes the module ("publisher P", "key K",
	// "package DIGEST"); ls sets it.
	Revoked string `json:"revoked,omitempty"`
}

// InfoOf is the Info of m.
func InfoOf(m *Installed) Info {
	i := Info{PackageID: m.PackageID, Version: m.Version, Publisher: m.Publisher, Enabled: m.Enabled,
		Digest: m.Digest, Key: m.Key, ProvidedOps: m.Manifest.ProvidedOps, Dependencies: m.Manifest.Dependencies}
	if i.ProvidedOps == nil {
		i.ProvidedOps = []string{}
	}
	if i.Dependencies == nil {
		i.Dependencies = []Dependency{}
	}
	return i
}

// Infos are the Infos of ms; with tr, each says what revokes it.
func Infos(ms []*Installed, tr *Trust) []Info {
	out := make([]Info, 0, len(ms))
	for _, m := range ms {
		i := InfoOf(m)
		if tr != nil {
			i.Revoked = tr.Revocation(m)
		}
		out = append(out, i)
	}
	return out
}

// stateColumn is a module's STATE column: enabled, disabled, or revoked
// (publisher P | key K | package DIGEST).
func stateColumn(m *Installed, tr *Trust) string {
	if tr != nil {
		if r := tr.Revocation(m); r != "" {
			return "revoked (" + r + ")"
		}
	}
	if m.Enabled {
		return "enabled"
	}
	return "disabled"
}

// WriteTable writes the modules ms as module ls prints them, each with its
// state under tr.
func WriteTable(w io.Writer, ms []*Installed, tr *Trust) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tVERSION\tSTATE\tPUBLISHER\tDIGEST\tOPS\tDEPENDS ON")
	for _, m := range ms {
		st := stateColumn(m, tr)
		var deps []string
		for _, d := range m.Manifest.Dependencies {
			deps = append(deps, d.String())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.PackageID, m.Version, st, m.Publisher, m.Digest[:12], len(m.Manifest.ProvidedOps), strings.Join(deps, "; "))
	}
	return tw.Flush()
}

// Shown is a module as module show prints it: its Info, manifest and the
// modules that depend on it.
type Shown struct {
	Info
	Manifest   *Manifest `json:"manifest"`
	Dependents []string  `json:"dependents"`

	m *Installed
}

// Show is the module show report of m among the installed modules all.
func Show(m *Installed, all []*Installed) *Shown {
	dependents := []string{}
	for _, x := range all {
		for _, d := range x.Manifest.Dependencies {
			if d.ModuleID == m.PackageID {
				dependents = append(dependents, x.ID())
			}
		}
	}
	return &Shown{Info: InfoOf(m), Manifest: m.Manifest, Dependents: dependents, m: m}
}

// WriteText writes the report as module show prints it.
func (s *Shown) WriteText(w io.Writer) error {
	m := s.m
	var b strings.Builder
	st := "disabled"
	if m.Enabled {
		st = "enabled"
	}
	fmt.Fprintf(&b, "module     %s (%s)\npublisher  %s\ndigest     %s\nkey        %s\nruntime    %s on %s, %s/%s\n",
		m.ID(), st, m.Publisher, m.Digest, m.Key, m.Manifest.Runtime, strings.Join(m.Manifest.Platforms, ", "), m.Manifest.OS, m.Manifest.Arch)
	for _, op := range m.Manifest.ProvidedOps {
		fmt.Fprintf(&b, "provides   %s\n", op)
	}
	for _, d := range m.Manifest.Dependencies {
		fmt.Fprintf(&b, "depends on %s\n", d)
	}
	for _, d := range s.Dependents {
		fmt.Fprintf(&b, "needed by  %s\n", d)
	}
	for _, a := range m.Manifest.Artifacts {
		fmt.Fprintf(&b, "artifact   %s %d bytes sha256 %s\n", a.Path, a.Size, a.SHA256)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteGraph writes the enabled modules in load order as module graph
// prints them: each with the modules it depends on.
func WriteGraph(w io.Writer, order []*Installed) error {
	for i, m := range order {
		var deps []string
		for _, d := range m.Manifest.Dependencies {
			deps = append(deps, d.ModuleID)
		}
		line := fmt.Sprintf("%d %s", i+1, m.ID())
		if len(deps) > 0 {
			line += " <- " + strings.Join(deps, ", ")
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes the trust as module trust ls prints it.
func (t *Trust) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, k := range t.Keys {
		fmt.Fprintf(&b, "trusted   %s %s\n", k.Publisher, k.Key)
	}
	for _, p := range t.RevokedPublishers {
		fmt.Fprintf(&b, "revoked   publisher %s\n", p)
	}
	for _, k := range t.RevokedKeys {
		fmt.Fprintf(&b, "revoked   key %s\n", k)
	}
	for _, d := range t.RevokedPackages {
		fmt.Fprintf(&b, "revoked   package %s\n", d)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the install's outcome as module install prints it: the
// activation checks, then what changed.
func (r *InstallResult) WriteText(w io.Writer) error {
	for _, c := range r.Activation {
		if c.Checked {
			fmt.Fprintf(w, "activated on %s: implementation ids match provided_ops; init and shutdown ran\n", c.Platform)
		} else {
			fmt.Fprintf(w, "not activation-checked on %s: %s\n", c.Platform, c.Note)
		}
	}
	var err error
	switch {
	case r.NoOp:
		_, err = fmt.Fprintf(w, "%s is already installed (identical package): no change\n", r.Module.ID())
	case r.Replaced != nil:
		_, err = fmt.Fprintf(w, "installed %s (digest %s), replacing %s (now disabled; module rollback %s re-enables it)\n", r.Module.ID(), r.Module.Digest, r.Replaced.ID(), r.Module.PackageID)
	case r.Module.Enabled:
		_, err = fmt.Fprintf(w, "installed %s (digest %s)\n", r.Module.ID(), r.Module.Digest)
	default:
		_, err = fmt.Fprintf(w, "installed %s (digest %s), disabled: a newer version is enabled\n", r.Module.ID(), r.Module.Digest)
	}
	return err
}

// RefusePackage refuses a runtime module package (file name, bytes blob)
// where a ChipCallable blob is expected: hosts that do not load runtime
// modules reject them instead of reading them as something else.
func RefusePackage(name string, blob []byte) error {
	if strings.HasSuffix(name, ".ptomodule") {
		return fmt.Errorf("%s is a runtime module package (module_abi %d), not a ChipCallable blob: install it with ptojit module install", name, ModuleABI)
	}
	if files, err := ReadArchive(blob); err == nil {
		if _, ok := files[ManifestName]; ok {
			return fmt.Errorf("%s is a runtime module package (module_abi %d), not a ChipCallable blob: install it with ptojit module install", name, ModuleABI)
		}
	}
	return nil
}
