package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/envaudit"
	"github.com/ptojit/ptojit/envaudit/envreg"
)

func init() {
	register(&cli.Command{
		Name:    "envaudit",
		Usage:   "envaudit [--registry FILE] [--root DIR] [--scan DIR:EXT[,EXT]]... [--order path|upstream] [--python 3.10|3.11|3.12] [--json] [FILE...]",
		Summary: "check that every environment read is classified in the registry",
		Long: `Scans Python, C++ and Go sources for environment reads and reports every
variable the environment registry does not classify, and every dynamic read
(a name that cannot be resolved statically, or a bulk read of the whole
environment) that no dynamic-read exception allows:

  <path>:<line>: unclassified environment input: <NAME>
  <path>:<line>: unclassified environment input: dynamic read in <function>

With FILEs (as pre-commit passes them) only those inside a scan root with an
audited suffix are checked. With none, the whole tree is scanned and unused
exceptions are reported too:

  Unused dynamic-read exception: <path>:<function>

The defaults depend on the layout of the root. PyPTO's (a directory
python/pypto): the registry python/pypto/_environment.json; .py under
python/pypto; .cpp and .h under src, include and python/bindings. Any other:
the registry _environment.json at the root, and every Python (.py), C and
C++ (.c .cc .cpp .cxx .c++ .h .hh .hpp .hxx .h++ .inl .ipp) and Go (.go)
file anywhere under the root, so that the files pre-commit passes are
audited by their suffix alone. Each --scan replaces the defaults with one
root, e.g. --scan .:go. testdata and hidden directories and Go _test.go files
are never scanned. Files ending .py are Python, .go Go, anything else C++.
A registry that does not exist is a usage error; --registry names another.

Findings are sorted by path and line. --order upstream prints them in the
order of PyPTO's lint instead (scan roots in order, files by path, each
Python file's reads in the breadth-first order of Python's ast.walk), for
comparing the two line by line. Python files are parsed as Python 3.10
parses them (the version PyPTO's lint targets): except* (3.11), type
statements and type parameters (3.12) are syntax findings unless --python
names a version that accepts them.

Exit status: 0 clean, 1 findings, 2 usage error or invalid registry.`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o envauditOptions
			fs.StringVar(&o.registry, "registry", "", "the environment registry (default ROOT/"+envaudit.DefaultRegistry+" in PyPTO's layout, else ROOT/"+envaudit.PlainRegistry+")")
			fs.StringVar(&o.root, "root", ".", "the repository root: paths in findings and exceptions are relative to it")
			fs.StringArrayVar(&o.scans, "scan", nil, "a scan root and its audited suffixes, DIR:EXT[,EXT] (repeatable; replaces the defaults)")
			fs.BoolVar(&o.json, "json", false, "print the findings as JSON")
			fs.StringVar(&o.order, "order", "path", "the order of the findings: path (by path and line) or upstream (PyPTO's lint's order)")
			fs.StringVar(&o.python, "python", "3.10", "the Python version whose grammar is accepted: 3.10, 3.11 or 3.12")
			fs.IntVar(&o.jobs, "jobs", 0, "files parsed at once (default: the number of CPUs)")
			fs.BoolVar(&o.parseAll, "parse-all", false, "analyse every Python file, even those that cannot hold a read (for measurements; every file is parsed and checked either way)")
			_ = fs.MarkHidden("parse-all")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				return runEnvaudit(ctx, env, o, args)
			}
		},
	})
}

type envauditOptions struct {
	registry string
	root     string
	scans    []string
	json     bool
	jobs     int
	parseAll bool
	order    string
	python   string
}

func runEnvaudit(ctx context.Context, env *cli.Env, o envauditOptions, files []string) error {
	cfg := envaudit.Config{Root: o.root, Jobs: o.jobs, Full: o.parseAll}
	switch o.order {
	case "path":
	case "upstream":
		cfg.Order = envaudit.OrderUpstream
	default:
		return cli.Usagef("envaudit: --order %q: want path or upstream", o.order)
	}
	switch o.python {
	case "3.10":
	case "3.11":
		cfg.Python = 11
	case "3.12":
		cfg.Python = 12
	default:
		return cli.Usagef("envaudit: --python %q: want 3.10, 3.11 or 3.12", o.python)
	}
	for _, s := range o.scans {
		sc, err := envaudit.ParseScan(s)
		if err != nil {
			return cli.Usagef("%s", err.Error())
		}
		cfg.Scans = append(cfg.Scans, sc)
	}
	for _, f := range files {
		if _, err := os.Stat(env.Abs(f)); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return cli.Invalid(fmt.Errorf("envaudit: %s: %v", f, err))
		}
	}
	if len(files) > 0 {
		cfg.Files = files
	}
	regPath, reg, err := loadAuditRegistry(o)
	if err != nil {
		return err
	}
	cfg.Registry = reg
	rep, err := envaudit.Audit(ctx, cfg)
	if err != nil {
		return err
	}
	if o.json {
		if err := cli.WriteJSON(env.Stdout, rep); err != nil {
			return err
		}
	} else {
		for _, l := range rep.Lines() {
			fmt.Fprintln(env.Stdout, l)
		}
		rep.WriteHelp(env.Stderr, regPath)
	}
	if !rep.OK() {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// loadAuditRegistry loads the registry --registry names, or the default
// of the root's layout, and returns its path as given. A registry that does
// not exist is a usage error that says how to name one; an invalid one is
// invalid input. Both exit 2.
func loadAuditRegistry(o envauditOptions) (string, *envreg.Registry, error) {
	regPath := o.registry
	if regPath == "" {
		def, _ := envaudit.Defaults(o.root)
		regPath = filepath.Join(o.root, filepath.FromSlash(def))
	}
	reg, err := envreg.LoadRegistry(regPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && o.registry != "":
		return "", nil, &cli.UsageError{Command: "envaudit", Msg: fmt.Sprintf("envaudit: --registry %s: no such file", regPath)}
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, &cli.UsageError{Command: "envaudit", Msg: fmt.Sprintf(
			"envaudit: no environment registry: %s does not exist; name one with --registry FILE (the default is %s at the root, %s in PyPTO's layout)",
			regPath, envaudit.PlainRegistry, envaudit.DefaultRegistry)}
	case err != nil:
		return "", nil, cli.Invalid(err)
	}
	return regPath, reg, nil
}
