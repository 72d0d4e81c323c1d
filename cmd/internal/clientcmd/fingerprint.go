package clientcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

func init() {
	register(&cli.Command{
		Name:    "fingerprint",
		Usage:   "fingerprint [--python-only] [--extra] [--extra-fingerprint S] [--records] [--json] PATH...",
		Summary: "print the content fingerprint of files and directories",
		Long: `Prints digest(("content", [root, ...])), the identity of the bytes of the
files under the PATHs, as pypto._identity.fingerprint_content computes it.
Each PATH is one root: a file, or a directory read recursively (skipping
.git, __pycache__, *.pyc and *.pyo). With --python-only, directories keep
only their *.py files. Suffixes are pathlib's: a file named .pyc has none
and contributes, a file named .py has none and is not a Python file.

With --extra, prints instead the extra-sources digest
digest(("extra_sources", content, extra_fingerprint)) over the PATHs as
python-only roots (no PATH is valid), with --extra-fingerprint as the
application's extra fingerprint (None when not given).

--records prints the records the digest is taken of, in the wire form, one
per line, before the digest. --json prints {"digest", "unavailable",
"files", "bytes", "seconds"}.

The fingerprint is unavailable (exit status 1, the reason on stderr) for a
missing input, a broken symlink, a directory cycle, anything that is neither
a regular file nor a directory, an unreadable input, or an input that
changed while it was read.`,
		Setup: func(fs *pflag.FlagSet) cli.RunFunc {
			var o fingerprintOptions
			fs.BoolVar(&o.pythonOnly, "python-only", false, "directories contribute only .py files")
			fs.BoolVar(&o.extra, "extra", false, "print the extra-sources digest of the PATHs")
			fs.StringVar(&o.extraFingerprint, "extra-fingerprint", "", "the application's extra fingerprint (with --extra)")
			fs.BoolVar(&o.records, "records", false, "print the records before the digest")
			fs.BoolVar(&o.json, "json", false, "print a JSON object")
			return func(ctx context.Context, env *cli.Env, args []string) error {
				o.extraFingerprintSet = fs.Changed("extra-fingerprint")
				return runFingerprint(env, o, args)
			}
		},
	})
}

type fingerprintOptions struct {
	pythonOnly          bool
	extra               bool
	extraFingerprint    string
	extraFingerprintSet bool
	records             bool
	json                bool
}

// fingerprintResult is the --json output.
type fingerprintResult struct {
	Digest      *string  `json:"digest"`
	Unavailable *string  `json:"unavailable"`
	Files       int      `json:"files"`
	Bytes       int64    `json:"bytes"`
	Seconds     float64  `json:"seconds"`
	Records     []string `json:"records,omitempty"`
}

func runFingerprint(env *cli.Env, o fingerprintOptions, args []string) error {
	if len(args) == 0 && !o.extra {
		return cli.Usagef("fingerprint: want at least one PATH (only --extra takes none: the digest of no extra sources)")
	}
	if o.extraFingerprintSet && !o.extra {
		return cli.Usagef("fingerprint: --extra-fingerprint needs --extra")
	}
	// The walk allocates a node per file and the records; a short-lived
	// command need not collect them as eagerly as a long-lived process.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	start := time.Now()
	roots, err := fingerprintRoots(env, o, args)
	if err != nil {
		return err
	}

	var (
		res     fingerprintResult
		records []inventory.Value
		digest  inventory.Sum
	)
	var content *inventory.Content
	if len(roots) > 0 || !o.extra {
		// The records are built only to be printed.
		content, err = inventory.FingerprintWith(roots, inventory.FingerprintOptions{DigestOnly: !o.records})
	}
	if content != nil {
		res.Files, res.Bytes = content.Files, content.Bytes
		records = append(records, content.Record())
		digest = content.Digest
	}
	if err == nil && o.extra {
		var extra inventory.Value = inventory.None{}
		if o.extraFingerprintSet {
			extra = inventory.Str(o.extraFingerprint)
			if !inventory.ValidStr(o.extraFingerprint) {
				return cli.Usagef("fingerprint: --extra-fingerprint is not valid UTF-8")
			}
		}
		var contentDigest inventory.Sum
		if content != nil {
			contentDigest = content.Digest
		} else {
			empty := inventory.T(inventory.Str("content"), inventory.List{})
			records = append(records, empty)
			contentDigest = inventory.MustDigest(empty)
		}
		rec := inventory.T(inventory.Str("extra_sources"), inventory.Str(contentDigest.String()), extra)
		records = append(records, rec)
		digest, err = inventory.Digest(rec)
	}
	res.Seconds = time.Since(start).Seconds()

	var unavailable *inventory.UnavailableError
	if err != nil && !errors.As(err, &unavailable) {
		return fmt.Errorf("fingerprint: %w", err)
	}
	if unavailable != nil {
		reason := unavailable.Error()
		res.Unavailable = &reason
	} else {
		d := digest.String()
		res.Digest = &d
	}

	if err := writeFingerprint(env, o, &res, records, unavailable == nil); err != nil {
		return err
	}
	if unavailable != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", progName(env), *res.Unavailable)
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// fingerprintRoots makes the content roots of the PATH arguments, a
// relative one joined to env.Dir.
func fingerprintRoots(env *cli.Env, o fingerprintOptions, args []string) ([]inventory.ContentRoot, error) {
	roots := make([]inventory.ContentRoot, 0, len(args))
	for _, a := range args {
		if a == "" {
			return nil, cli.Usagef("fingerprint: empty PATH")
		}
		if env.Dir != "" && !strings.HasPrefix(a, "/") {
			a = env.Dir + "/" + a // joined, not cleaned: ".." stays for the filesystem
		}
		r, err := inventory.NewContentRoot(a, o.pythonOnly || o.extra)
		if err != nil {
			return nil, cli.Usagef("fingerprint: %v", err)
		}
		roots = append(roots, r)
	}
	return roots, nil
}

// writeFingerprint prints res: the records first with --records (when
// withRecords: the digest is available), then res as JSON with --json,
// else the digest alone.
func writeFingerprint(env *cli.Env, o fingerprintOptions, res *fingerprintResult, records []inventory.Value, withRecords bool) error {
	if o.records && withRecords {
		for _, r := range records {
			b, err := inventory.Encode(r)
			if err != nil {
				return fmt.Errorf("fingerprint: %w", err)
			}
			if o.json {
				res.Records = append(res.Records, string(b))
			} else if err := writeLine(env.Stdout, b); err != nil {
				return err
			}
		}
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, *res)
	}
	if res.Digest != nil {
		if _, err := fmt.Fprintln(env.Stdout, *res.Digest); err != nil {
			return err
		}
	}
	return nil
}

func writeLine(w io.Writer, b []byte) error {
	_, err := w.Write(append(b, '\n'))
	return err
}

func progName(env *cli.Env) string {
	if env.Prog != "" {
		return env.Prog
	}
	return "ptojit"
}
