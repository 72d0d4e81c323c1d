package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/filesys/durable"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
)

// moduleLockWait bounds how long a module command waits for the store lock.
const moduleLockWait = 2 * time.Minute

const moduleLong = `Runtime modules are signed packages (.ptomodule) of chip callables that a
team builds with ptojit and others install, verify and resolve by operation
name. The module store is --module-dir, else PTOJIT_MODULE_DIR, else
$XDG_DATA_HOME/ptojit/modules, else ~/.local/share/ptojit/modules (never the
cache, whose entries can be evicted). Every change runs as one crash-safe
transaction under the store lock; a waiting or failing command names the
process that holds it.

Flow:
  ptojit module keygen --out team.key          # prints the public key
  ptojit module trust add org.team ed25519:... # on every installing machine
  ptojit module pack DIR --key team.key -o scan.ptomodule
  ptojit module install scan.ptomodule
  ptojit module ls
  ptojit module graph

Manifest (module.json; unknown, duplicate or missing required fields are
refused, naming the field):
  package_id           string, required: dotted identifier ([a-z0-9_-] components)
  version              string, required: semantic version
  publisher            string, required: dotted identifier, a publisher the
                       signing key is trusted for
  module_abi           integer, required: 1
  kernel_abi           {"min": "MAJOR.MINOR", "max": "MAJOR.MINOR"}, optional
                       (1.0..1.0): the ptojit_sim.h versions the callables work
                       with; this build runs 1.0..1.3 (1.1: tensor strides;
                       1.2: operation parameters in the negotiated query;
                       1.3: the quantized dtypes q8x32 and q4x32)
  runtime              string, required: the runtime the callables are built for
  platforms            [string], required: of a2a3sim, a5sim, a2a3, a5
  os, arch             string, required: GOOS/GOARCH of the host
  description          string, optional
  artifacts            [{path, size, sha256}], required: pack fills it in
  provided_ops         [string], required: must equal the operations' impl_ids
  operations           [object], optional: operation descriptors; each has a
                       string impl_id and may name "callables":
                       [{platform, artifact, hashid}] (one per platform; pack
                       fills in hashid, install checks it)
  module_dependencies  [{module_id, min_version, max_version?, abi_tag,
                       publisher_id?, sha256?}], optional: inclusive bounds;
                       abi_tag must be "ptojit.module.v1"; sha256 pins the
                       digest of the dependency's canonical unsigned manifest
                       (module show prints it)

The canonical unsigned manifest is the typed-record encoding of the manifest
without its signature, absent optional fields left out; signatures are
ed25519 over it. Installation refuses unsigned packages, unknown or revoked
publishers, revoked keys and package digests, a publisher the key is not
trusted for, any altered byte, and a dependency graph that would not
validate (missing, disabled, out-of-range, cyclic, publisher- or
digest-mismatched dependencies; an implementation id provided twice).
There is no switch that disables verification.

Activation: before an install commits, the package's callables run in a
child worker for each sim platform (a2a3sim, a5sim) the module lists. The
child reports the implementation id of each callable (its orchestration's
ptojit_op_impl_id) and runs its ptojit_module_init, if exported. The reported
ids must equal provided_ops (of the operations with a callable for the
platform): none missing, none reported twice, none already provided by
another enabled module; and no init may fail. Every init that ran is
followed by its ptojit_module_shutdown, whatever the outcome. A failure
aborts the install and names the module, the callable and the reason;
nothing is written. Platforms without a host execution engine here (a2a3,
a5) are reported as not activation-checked. enable and rollback activate
the version they enable in the same way.`

// setupTrustRevoke declares the flags of "module trust revoke" and returns
// its RunFunc, which revokes the one publisher, key or package digest given.
func setupTrustRevoke(fs *pflag.FlagSet) cli.RunFunc {
	var o moduleOptions
	fs.StringVar(&o.moduleDir, "module-dir", "", "the module store (default: PTOJIT_MODULE_DIR or the user data directory)")
	p := fs.String("publisher", "", "revoke a publisher")
	k := fs.String("key", "", "revoke a key")
	d := fs.String("package", "", "revoke a package by its manifest digest (module show)")
	return func(ctx context.Context, env *cli.Env, args []string) error {
		n := 0
		for _, s := range []string{*p, *k, *d} {
			if s != "" {
				n++
			}
		}
		if len(args) > 0 || n != 1 {
			return cli.Usagef("module trust revoke: give exactly one of --publisher, --key and --package")
		}
		var r module.Revocation
		r.Publisher, r.Package = *p, *d
		if *k != "" {
			key, err := module.ParsePublicKey(*k)
			if err != nil {
				return cli.Usagef("module trust revoke: %v", err)
			}
			r.Key = key
		}
		return withStore(ctx, env, o, func(ctx context.Context, s *module.Store) error {
			disabled, err := s.TrustRevoke(ctx, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "revoked %s\n", strings.TrimSpace(*p+" "+*k+" "+*d))
			for _, m := range disabled {
				fmt.Fprintf(env.Stdout, "disabled %s\n", m.ID())
			}
			return nil
		})
	}
}

func init() {
	register(&cli.Command{
		Name:    "module",
		Usage:   "module <command> [arguments]",
		Summary: "pack, sign, install and inspect runtime modules of chip callables",
		Long:    moduleLong,
		Subcommands: []*cli.Command{
			{
				Name: "keygen", Usage: "module keygen --out KEY",
				Summary: "write a new ed25519 private key (0600) and print its public key",
				Long:    "Writes the private key to KEY (refusing to overwrite a file) and prints only the\npublic key on standard output, in the form 'trust add' takes.",
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					out := fs.String("out", "", "the private key file to write")
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 || *out == "" {
							return cli.Usagef("module keygen: usage: module keygen --out KEY")
						}
						return runKeygen(env, *out)
					}
				},
			},
			{
				Name: "pack", Usage: "module pack DIR --key KEY -o FILE [--cache-dir DIR]",
				Summary: "build a module's callables and write its signed package",
				Long: `DIR holds module.json and the build requests of the module's callables:
every NAME.request.json in DIR is built (from the cache when it can, like
ptojit build) and embedded as callables/NAME.PLATFORM.bin; every file under
DIR/files/ is embedded as is. pack fills in the manifest's artifacts and the
hashid of each operation callable, signs the payload with KEY and writes the
canonical archive to FILE. The builds write their outputs under --out-dir
(one directory per request), by default a temporary directory removed
afterwards, never into DIR.`,
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					var o packOptions
					fs.StringVar(&o.key, "key", "", "the private key (module keygen)")
					fs.StringVarP(&o.out, "output", "o", "", "the package file to write")
					fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory the builds use")
					fs.StringVar(&o.outDir, "out-dir", "", "where the builds write their outputs (default: a temporary directory, removed afterwards)")
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) != 1 || o.key == "" || o.out == "" {
							return cli.Usagef("module pack: usage: module pack DIR --key KEY -o FILE")
						}
						o.dir = args[0]
						return runPack(ctx, env, o)
					}
				},
			},
			storeCommand("install", "module install FILE|DIR", "verify, activate (in a sim child) and install a package (an archive or an unpacked package directory)", 1, runInstall),
			storeCommand("rollback", "module rollback ID", "re-enable the version enabled before the current one", 1, runRollback),
			storeCommand("enable", "module enable ID[@VERSION]", "enable a version (the newest without @VERSION)", 1, runEnable),
			storeCommand("disable", "module disable ID[@VERSION]", "disable a module (refused while enabled modules depend on it)", 1, runDisable),
			storeCommand("remove", "module remove ID[@VERSION]", "remove a version, or every version (refused while enabled modules depend on it)", 1, runRemove),
			storeCommand("ls", "module ls [--json]", "list the installed modules", 0, runModuleLs),
			storeCommand("show", "module show ID[@VERSION] [--json]", "show a module's manifest, digest, key and dependents", 1, runShow),
			storeCommand("verify", "module verify", "re-check every installed package, signature, artifact and the graph", 0, runModuleVerify),
			storeCommand("graph", "module graph [--json]", "list the enabled modules in load order, dependencies first", 0, runGraph),
			{
				Name: "trust", Usage: "module trust <add|revoke|ls>",
				Summary: "manage the publisher keys the store trusts",
				Subcommands: []*cli.Command{
					storeCommand("add", "module trust add PUBLISHER PUBKEY", "trust PUBKEY to sign for PUBLISHER", 2, runTrustAdd),
					{
						Name: "revoke", Usage: "module trust revoke --publisher P | --key PUBKEY | --package DIGEST",
						Summary: "revoke a publisher, a key or a package digest",
						Setup:   setupTrustRevoke,
					},
					storeCommand("ls", "module trust ls [--json]", "list trusted keys and revocations", 0, runTrustLs),
				},
			},
		},
	})
}

type moduleOptions struct {
	moduleDir string
	json      bool
	// look: the command only looks, so a store that does not exist is
	// an error naming it and nothing is created (module.OpenExisting).
	look bool
}

type packOptions struct {
	dir, key, out, cacheDir, outDir string
}

// storeCommand is a module subcommand that works on the store with nargs
// positional arguments.
func storeCommand(name, usage, summary string, nargs int, run func(context.Context, *cli.Env, *module.Store, moduleOptions, []string) error) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, Summary: summary,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			o := moduleOptions{look: looksOnly(usage)}
			fs.StringVar(&o.moduleDir, "module-dir", "", "the module store (default: PTOJIT_MODULE_DIR or the user data directory)")
			if strings.Contains(usage, "--json") {
				fs.BoolVar(&o.json, "json", false, "print JSON")
			}
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) != nargs {
					return cli.Usagef("usage: ptojit %s", usage)
				}
				if name == "install" {
					// An invalid package is refused before the store is
					// opened (or created).
					if _, err := module.ReadPackage(env.Abs(args[0]), args[0]); err != nil {
						return cli.Invalid(err)
					}
				}
				return withStore(ctx, env, o, func(ctx context.Context, s *module.Store) error {
					return run(ctx, env, s, o, args)
				})
			}
		},
	}
}

func withStore(ctx context.Context, env *cli.Env, o moduleOptions, fn func(context.Context, *module.Store) error) error {
	dir, err := module.StoreDir(o.moduleDir, env.Getenv, env.Abs)
	if err != nil {
		return err
	}
	open := module.Open
	if o.look {
		open = module.OpenExisting
	}
	s, err := open(dir, module.Options{Wait: func(h module.Holder) {
		fmt.Fprintf(env.Stderr, "ptojit: waiting for the module store lock of %s, held by %s\n", dir, h)
	}, Activate: func(ctx context.Context, p *module.Package, enabled []*module.Installed) ([]module.PlatformCheck, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("activating module %s: locating this program to start a child: %w", p.Manifest.ID(), err)
		}
		return ops.InstallCheck{ChildCommand: []string{exe, workerChildCommand}, Stderr: env.Stderr}.Activate(ctx, p, enabled)
	}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, moduleLockWait)
	defer cancel()
	return fn(ctx, s)
}

func runKeygen(env *cli.Env, out string) error {
	pub, err := module.WriteNewKey(env.Abs(out), out)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, pub)
	return nil
}

func runPack(ctx context.Context, env *cli.Env, o packOptions) error {
	dir := env.Abs(o.dir)
	kb, err := os.ReadFile(env.Abs(o.key))
	if err != nil {
		return fmt.Errorf("module pack: key: %w", err)
	}
	priv, err := module.ParsePrivateKey(kb)
	if err != nil {
		return fmt.Errorf("module pack: %s: %w", o.key, err)
	}
	src, err := module.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("module pack: %s: %w", o.dir, err)
	}
	mb, ok := src[module.ManifestName]
	if !ok {
		return cli.Usagef("module pack: %s has no %s", o.dir, module.ManifestName)
	}
	m, err := module.ParseSourceManifest(mb)
	if err != nil {
		return cli.Usagef("module pack: %s: %v", filepath.Join(o.dir, module.ManifestName), err)
	}
	if m.OS == "" && m.Arch == "" {
		m.OS, m.Arch = runtime.GOOS, runtime.GOARCH
	}
	if m.OS != runtime.GOOS || m.Arch != runtime.GOARCH {
		return fmt.Errorf("module pack: the manifest says %s/%s, but the callables are built for this host, %s/%s", m.OS, m.Arch, runtime.GOOS, runtime.GOARCH)
	}
	artifacts := module.Files{}
	var reqs []string
	for name, data := range src {
		if rest, ok := strings.CutPrefix(name, "files/"); ok && rest != "" {
			artifacts[name] = data
		}
		if !strings.Contains(name, "/") && strings.HasSuffix(name, ".request.json") {
			reqs = append(reqs, name)
		}
	}
	slices.Sort(reqs)
	outDir := o.outDir
	if outDir == "" {
		tmp, err := os.MkdirTemp("", "ptojit-pack-")
		if err != nil {
			return fmt.Errorf("module pack: %w", err)
		}
		defer os.RemoveAll(tmp)
		outDir = tmp
	} else {
		outDir = env.Abs(outDir)
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return fmt.Errorf("module pack: --out-dir: %w", err)
		}
	}
	for _, name := range reqs {
		art, blob, err := packCallable(ctx, env, o, m, dir, outDir, name)
		if err != nil {
			return err
		}
		artifacts[art] = blob
	}
	ar, p, err := module.Pack(m, artifacts, priv)
	if err != nil {
		return fmt.Errorf("module pack: %w", err)
	}
	if err := durable.WriteFile(env.Abs(o.out), ar, 0o644); err != nil {
		return fmt.Errorf("module pack: %w", err)
	}
	fmt.Fprintf(env.Stdout, "packed %s: %d artifacts, %d bytes\ndigest %s\nkey    %s\n", p.Manifest.ID(), len(p.Manifest.Artifacts), len(ar), p.Digest, p.Key)
	return nil
}

// packCallable builds the request name of the module source dir, with
// its outputs under outDir, checks it against the manifest m and returns
// the callable's artifact name and bytes.
func packCallable(ctx context.Context, env *cli.Env, o packOptions, m *module.Manifest, dir, outDir, name string) (string, []byte, error) {
	req, err := readRequest(env, filepath.Join(dir, name))
	if err != nil {
		return "", nil, fmt.Errorf("module pack: %s: %w", name, err)
	}
	// The request as read (every path absolute, its base directory
	// named), with its outputs under outDir: the build leaves DIR alone.
	req.OutputDir = filepath.Join(outDir, strings.TrimSuffix(name, ".request.json"))
	rb, err := json.Marshal(req)
	if err != nil {
		return "", nil, fmt.Errorf("module pack: %s: %w", name, err)
	}
	rp := filepath.Join(outDir, name)
	if err := os.WriteFile(rp, rb, 0o644); err != nil {
		return "", nil, fmt.Errorf("module pack: %w", err)
	}
	if req.Runtime != m.Runtime {
		return "", nil, fmt.Errorf("module pack: %s: runtime %s, but the manifest's runtime is %s", name, req.Runtime, m.Runtime)
	}
	if !slices.Contains(m.Platforms, req.Platform) {
		return "", nil, fmt.Errorf("module pack: %s: platform %s is not in the manifest's platforms %v", name, req.Platform, m.Platforms)
	}
	resp, err := buildForRun(ctx, env, runOptions{request: rp, cacheDir: o.cacheDir}, req)
	if err != nil {
		return "", nil, fmt.Errorf("module pack: building %s: %w", name, err)
	}
	blob, err := os.ReadFile(resp.Callable)
	if err != nil {
		return "", nil, fmt.Errorf("module pack: %s: %w", name, err)
	}
	if h, err := registry.ChipHashid(req.Platform, req.Runtime, blob); err != nil || h.String() != resp.Hashid {
		return "", nil, fmt.Errorf("module pack: %s: the built callable's hashid %v differs from the build's %s", name, h, resp.Hashid)
	}
	art := path.Join("callables", strings.TrimSuffix(name, ".request.json")+"."+req.Platform+".bin")
	fmt.Fprintf(env.Stderr, "built %s: %s %s (%s)\n", name, art, resp.Hashid, resp.Status)
	return art, blob, nil
}

func runInstall(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	src := env.Abs(args[0])
	ar, err := module.ReadPackage(src, args[0])
	if err != nil {
		// A missing or unreadable package is invalid input (exit 2).
		return cli.Invalid(err)
	}
	r, err := s.Install(ctx, ar)
	if err != nil {
		return fmt.Errorf("module install: %s: %w", args[0], err)
	}
	return r.WriteText(env.Stdout)
}

func runRollback(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	from, to, err := s.Rollback(ctx, args[0])
	if err != nil {
		return fmt.Errorf("module rollback: %w", err)
	}
	if from != nil {
		fmt.Fprintf(env.Stdout, "rolled back %s to %s\n", from.ID(), to.Version)
	} else {
		fmt.Fprintf(env.Stdout, "enabled %s\n", to.ID())
	}
	return nil
}

func runEnable(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	m, err := s.Enable(ctx, args[0])
	if err != nil {
		return fmt.Errorf("module enable: %w", err)
	}
	fmt.Fprintf(env.Stdout, "enabled %s\n", m.ID())
	return nil
}

func runDisable(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	m, err := s.Disable(ctx, args[0])
	if err != nil {
		return fmt.Errorf("module disable: %w", err)
	}
	fmt.Fprintf(env.Stdout, "disabled %s\n", m.ID())
	return nil
}

func runRemove(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	ms, err := s.Remove(ctx, args[0])
	if err != nil {
		return fmt.Errorf("module remove: %w", err)
	}
	for _, m := range ms {
		fmt.Fprintf(env.Stdout, "removed %s\n", m.ID())
	}
	return nil
}

func runModuleLs(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	ms, err := s.List()
	if err != nil {
		return err
	}
	tr, err := s.Trust()
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, module.Infos(ms, tr))
	}
	return module.WriteTable(env.Stdout, ms, tr)
}

func runShow(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	m, err := s.Lookup(args[0])
	if err != nil {
		return fmt.Errorf("module show: %w", err)
	}
	all, err := s.List()
	if err != nil {
		return err
	}
	r := module.Show(m, all)
	if o.json {
		return cli.WriteJSON(env.Stdout, r)
	}
	return r.WriteText(env.Stdout)
}

func runModuleVerify(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	probs, err := s.Verify(ctx)
	if err != nil {
		return err
	}
	ms, _ := s.List()
	for _, p := range probs {
		fmt.Fprintf(env.Stdout, "FAIL %v\n", p)
	}
	if len(probs) > 0 {
		fmt.Fprintf(env.Stdout, "%d problems in %d installed modules\n", len(probs), len(ms))
		return cli.Exit(cli.ExitFailure)
	}
	fmt.Fprintf(env.Stdout, "verified %d installed modules: packages, signatures, artifacts, trust and graph ok\n", len(ms))
	return nil
}

func runGraph(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	order, err := s.LoadOrder()
	if err != nil {
		return fmt.Errorf("module graph: %w", err)
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, module.Infos(order, nil))
	}
	return module.WriteGraph(env.Stdout, order)
}

func runTrustAdd(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	key, err := module.ParsePublicKey(args[1])
	if err != nil {
		return cli.Usagef("module trust add: %v", err)
	}
	if err := s.TrustAdd(ctx, args[0], key); err != nil {
		return fmt.Errorf("module trust add: %w", err)
	}
	fmt.Fprintf(env.Stdout, "trusted %s for publisher %s\n", key, args[0])
	return nil
}

func runTrustLs(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	t, err := s.Trust()
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, t)
	}
	return t.WriteText(env.Stdout)
}
