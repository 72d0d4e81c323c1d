package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/toolchain"
)

func init() {
	register(&cli.Command{
		Name:    "toolchain",
		Usage:   "toolchain [--json] [--policy P] [--platform P] --pypto-root D --runtime-root D --pto-isa-root D --pto-isa-pin SHA [--pto-isa-url URL] --ptoas-root D --cann-root D",
		Summary: "identify the five toolchain components and print the toolchain digest",
		Long: `Resolves the five components a PTO build depends on — pypto, runtime, pto_isa,
ptoas and device_toolchain — and prints, for each, the evidence that
identifies it and its digest, or the reason it has none; then the toolchain
digest, which exists only when all five have one (exit status 1 otherwise).

Evidence under the content policy (--policy content):
  pypto, runtime    the contents of their roots (every file)
  pto_isa           verified_revision = the pin, when HEAD is the pin and the
                    worktree holds exactly the pinned tree (nothing modified,
                    untracked or ignored); else the contents of the checkout.
                    With --pto-isa-url, a checkout that is missing or not
                    exactly at the pin is cloned again from there first.
  ptoas             reported_version = the complete output of the launcher's
                    --version (bin/ptoas or ptoas in the root), and the
                    contents of the launcher and the shared libraries it
                    loads (every local build of PTOAS prints "ptoas 0.27");
                    the root's contents when that probe fails
  device_toolchain  a2a3, a5: the CANN innerversion (else version) from its
                    one ascend_toolkit_install.info (in the root or its
                    x86_64-, aarch64- or arm64-linux directory), else every
                    file of the CANN root, with fallback_reason saying why
                    (no info file, two, an empty value, another layout).
                    a2a3sim, a5sim: the host C/C++ compilers (CC
                    and CXX, else cc and c++ on PATH): their --version texts
                    and the contents of the drivers and of every program,
                    directory, link input, include directory and shared
                    library (ldd) they report.
                    LD_PRELOAD, LD_AUDIT, GCC_EXEC_PREFIX or COMPILER_PATH set
                    makes it unavailable.

--policy build (the default; or PYPTO_CACHE_IDENTITY=build) identifies ELF files by their
GNU build-id, source checkouts by their revision (a dirty checkout is
unavailable) and folds PYPTO_CACHE_EPOCH in; its digests never equal the
content policy's. Its evidence digests PyPTO's record of each component,
byte for byte, except where PyPTO has none and ptojit adds its own: the
contents of a component PyPTO cannot identify ("record": "ptojit-content")
and a clang compiler ("record": "ptojit-clang": its --version, the Build-IDs
of clang, the linker and the libraries they load, its resource directory,
the GCC installation it selected and the files its link reads).

Roots default to PTOAS_ROOT, ASCEND_HOME_PATH and PTO_ISA_ROOT. --json prints
{"usable", "digest", "policy", "components": {name: {"digest", "evidence",
"unavailable", "files", "bytes", "record"}}, "tools": {...}, "seconds"};
"record" (build policy only) is "pypto", "ptojit-content" or "ptojit-clang".`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o toolchainOptions
			fs.BoolVar(&o.json, "json", false, "print a JSON object")
			fs.StringVar(&o.policy, "policy", "", "identity policy: build or content (default: PYPTO_CACHE_IDENTITY, else build)")
			fs.StringVar(&o.cfg.Platform, "platform", "a2a3sim", "platform: "+strings.Join(registry.Platforms, ", "))
			fs.StringVar(&o.cfg.PyptoRoot, "pypto-root", "", "PyPTO installation root")
			fs.StringVar(&o.cfg.RuntimeRoot, "runtime-root", "", "runtime root")
			fs.StringVar(&o.cfg.PtoIsaRoot, "pto-isa-root", "", "PTO-ISA checkout (default PTO_ISA_ROOT)")
			fs.StringVar(&o.cfg.PtoIsaPin, "pto-isa-pin", "", "the full commit id PTO-ISA is pinned to")
			fs.StringVar(&o.cfg.PtoIsaURL, "pto-isa-url", "", "clone PTO-ISA from here when the checkout is not the pin")
			fs.StringVar(&o.cfg.PtoasRoot, "ptoas-root", "", "ptoas installation root (default PTOAS_ROOT)")
			fs.StringVar(&o.cfg.CannRoot, "cann-root", "", "CANN toolkit root (default ASCEND_HOME_PATH)")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) != 0 {
					return cli.Usagef("toolchain: unexpected argument %q", args[0])
				}
				return runToolchain(ctx, env, o)
			}
		},
	})
}

type toolchainOptions struct {
	json   bool
	policy string
	cfg    toolchain.Config
}

// toolchainResult is the --json output.
type toolchainResult struct {
	Usable     bool                          `json:"usable"`
	Digest     *string                       `json:"digest"`
	Policy     toolchain.Policy              `json:"policy"`
	Components map[string]toolchainComponent `json:"components"`
	Tools      map[string]string             `json:"tools"`
	Seconds    float64                       `json:"seconds"`
	order      []string
}

type toolchainComponent struct {
	Digest      *string        `json:"digest"`
	Evidence    map[string]any `json:"evidence"`
	Unavailable *string        `json:"unavailable"`
	Files       int            `json:"files"`
	Bytes       int64          `json:"bytes"`
	Record      string         `json:"record,omitempty"`
}

// progressDelay is how long a capture runs before the progress line shows.
const progressDelay = 300 * time.Millisecond

// progressStart returns the channel that starts the progress line (tests
// replace it).
var progressStart = func() <-chan time.Time { return time.After(progressDelay) }

func runToolchain(ctx context.Context, env *cli.Env, o toolchainOptions) error {
	start := time.Now()
	if o.policy != "" {
		p, err := toolchain.ParsePolicy(o.policy)
		if err != nil {
			return cli.Usagef("toolchain: %v", err)
		}
		o.cfg.Policy = p
	}
	cfg := o.cfg
	cfg.Getenv, cfg.Environ = env.Getenv, env.Environ
	for _, p := range []*string{&cfg.PyptoRoot, &cfg.RuntimeRoot, &cfg.PtoIsaRoot, &cfg.PtoasRoot, &cfg.CannRoot} {
		// The same normalization as a request's roots (api.Request.Resolve):
		// absolute and lexically clean, so both give one digest.
		*p = env.Abs(*p)
	}
	var dirs atomic.Int64
	stop := startProgress(env, &dirs)
	ids := toolchain.NewInstallationIdentityCache(toolchain.Options{BeforeDir: func(string) error { dirs.Add(1); return nil }})
	in, err := ids.Resolve(ctx, cfg)
	if err != nil {
		stop()
		if _, ok := err.(*toolchain.ConfigError); ok {
			return cli.Usagef("%v", err)
		}
		return fmt.Errorf("toolchain: %w", err)
	}
	id, err := ids.Capture(ctx, in)
	stop()
	if err != nil {
		return fmt.Errorf("toolchain: %w", err)
	}
	res := toolchainJSON(id, in)
	res.Seconds = time.Since(start).Seconds()
	if o.json {
		if err := cli.WriteJSON(env.Stdout, res); err != nil {
			return err
		}
	} else if err := printToolchain(env.Stdout, res); err != nil {
		return err
	}
	if !id.Usable {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// startProgress shows, on a terminal and once the capture has taken more
// than progressDelay, a line counting the directories read; the returned
// function stops and erases it.
func startProgress(env *cli.Env, dirs *atomic.Int64) func() {
	if !env.StderrIsTerminal {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-done:
			return
		case <-progressStart():
		}
		spin := `|/-\`
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(env.Stderr, "\r%c reading toolchain installations: %d directories", spin[i%4], dirs.Load())
			select {
			case <-done:
				fmt.Fprint(env.Stderr, "\r\033[K")
				return
			case <-tick.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

func toolchainJSON(id *toolchain.Identity, in *toolchain.ToolchainInputs) *toolchainResult {
	res := &toolchainResult{Usable: id.Usable, Policy: id.Policy, Components: map[string]toolchainComponent{}, Tools: map[string]string{}}
	if id.Usable {
		d := id.Digest.String()
		res.Digest = &d
	}
	for _, c := range id.Components {
		var tc toolchainComponent
		if c.Unavailable != "" {
			r := c.Unavailable
			tc.Unavailable = &r
		} else {
			d := c.Digest.String()
			tc.Digest = &d
			tc.Evidence = map[string]any{}
			for k, v := range c.Evidence {
				tc.Evidence[string(k)] = valueJSON(v)
			}
		}
		tc.Files, tc.Bytes, tc.Record = c.Files, c.Bytes, c.Record
		res.Components[c.Name] = tc
		res.order = append(res.order, c.Name)
	}
	for k, v := range map[string]string{"host_cc": in.HostCC, "host_cxx": in.HostCXX, "ptoas": in.PtoasLauncher} {
		if v != "" {
			res.Tools[k] = v
		}
	}
	return res
}

// valueJSON turns evidence into JSON values: Str as a string (bytes that
// are not UTF-8, such as a lone surrogate, each run as U+FFFD), Dict as an
// object, List and Tuple as arrays, Int as a number, Bytes as hex, Bool as
// a boolean.
func valueJSON(v inventory.Value) any {
	switch v := v.(type) {
	case inventory.Str:
		return strJSON(string(v))
	case inventory.Dict:
		m := map[string]any{}
		for k, x := range v {
			m[strJSON(string(k))] = valueJSON(x)
		}
		return m
	case inventory.List:
		return listJSON(v)
	case inventory.Tuple:
		return listJSON(v)
	case inventory.Int:
		if i, ok := v.Int64(); ok {
			return i
		}
		return v.String()
	case inventory.Bytes:
		return hex.EncodeToString(v)
	case inventory.Bool:
		return bool(v)
	}
	return nil
}

func listJSON(l []inventory.Value) []any {
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = valueJSON(x)
	}
	return out
}

func strJSON(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func printToolchain(w io.Writer, res *toolchainResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %s\n", res.Policy)
	for _, name := range res.order {
		c := res.Components[name]
		if c.Unavailable != nil {
			fmt.Fprintf(&b, "%-17s unavailable: %s\n", name, *c.Unavailable)
			continue
		}
		fmt.Fprintf(&b, "%-17s %s\n", name, *c.Digest)
		keys := make([]string, 0, len(c.Evidence))
		for k := range c.Evidence {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val := fmt.Sprint(c.Evidence[k])
			if s, ok := c.Evidence[k].(string); ok && (strings.ContainsAny(s, "\n\t\"") || s == "") {
				val = strconv.Quote(s)
			}
			if k == "content" && c.Files > 0 {
				val += fmt.Sprintf(" (%d files, %s)", c.Files, cache.FormatSize(c.Bytes))
			}
			fmt.Fprintf(&b, "  %s: %s\n", k, val)
		}
		if c.Record != "" && c.Record != toolchain.RecordPyPTO {
			fmt.Fprintf(&b, "  record: %s (ptojit's; PyPTO has none)\n", c.Record)
		}
	}
	if res.Digest != nil {
		fmt.Fprintf(&b, "toolchain         %s\n", *res.Digest)
	} else {
		fmt.Fprintf(&b, "toolchain         unavailable\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
