package clientcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

const recordInputHelp = `Input forms:
  plain JSON (default)
      object -> dict, array -> list, true/false -> bool, null -> None,
      integer literal -> int of any size (at most 4300 digits, as in
      Python), any other number -> float64 (1E400 is inf, 1e-400 is 0.0;
      NaN, Infinity and -Infinity are accepted), string -> str. A \uXXXX
      escape is the code point it names, an unpaired surrogate included;
      an escaped surrogate pair is one character, as in Python's
      json.loads. The last of duplicate keys wins. Tuples and bytes cannot
      be written in this form.
  --wire
      an encoded record, accepted only when exactly canonical: schema 1,
      no whitespace, known tags, dict keys sorted by code point and unique,
      lowercase hex of even length, ints without leading zeros or "-0",
      floats as exactly 16 hex digits. A single trailing newline after the
      record is tolerated (so files written by "record encode" read back);
      nothing else may follow it.

Input that is not valid exits 1 with the byte offset of the first problem.
Inputs are limited to 64 MiB and 512 levels of nesting.`

func init() {
	register(&cli.Command{
		Name:    "record",
		Usage:   "record <encode|digest> [--wire] [FILE|-]",
		Summary: "print an identity record's canonical encoding or its digest",
		Long: `An identity record is a typed value (None, bool, int, float64, str, bytes,
list, tuple, dict with str keys) whose canonical encoding is byte-compatible
with pypto._identity schema 1; its digest is the SHA-256 of that encoding.
Cache keys, content fingerprints and toolchain identities are such digests.

` + recordInputHelp,
		Subcommands: []*cli.Command{
			{
				Name:    "encode",
				Usage:   "record encode [--wire] [FILE|-]",
				Summary: "print the canonical encoding of a record, followed by a newline",
				Long: `Reads one record from FILE, or from standard input when FILE is "-" or
absent, and prints its canonical encoding followed by a newline.

` + recordInputHelp + `

Examples:
  echo '{"rows": 32, "cols": 64}' | ptojit record encode
  ptojit record encode --wire options.rec   # check that a file is canonical`,
				Setup: recordSetup(false),
			},
			{
				Name:    "digest",
				Usage:   "record digest [--wire] [FILE|-]",
				Summary: "print the 64-hex SHA-256 digest of a record's canonical encoding",
				Long: `Reads one record from FILE, or from standard input when FILE is "-" or
absent, and prints the lowercase hex SHA-256 of its canonical encoding,
followed by a newline: the digest pypto._identity computes for the same
value.

` + recordInputHelp + `

Examples:
  echo '{"rows": 32, "cols": 64}' | ptojit record digest
  ptojit record encode options.json > options.rec
  ptojit record digest --wire options.rec`,
				Setup: recordSetup(true),
			},
		},
	})
}

// recordOptions are the inputs of runRecord.
type recordOptions struct {
	digest bool   // print the digest instead of the encoding
	wire   bool   // the input is an encoded record, not plain JSON
	file   string // "" or "-" for standard input
}

func recordSetup(digest bool) func(fs *pflag.FlagSet) cli.RunFunc {
	return func(fs *pflag.FlagSet) cli.RunFunc {
		opts := recordOptions{digest: digest}
		fs.BoolVar(&opts.wire, "wire", false, "read an encoded record, accepted only when exactly canonical, instead of plain JSON")
		return func(ctx context.Context, env *cli.Env, args []string) error {
			if len(args) > 1 {
				return cli.Usagef("record: want at most one FILE, got %d arguments", len(args))
			}
			if len(args) == 1 {
				opts.file = args[0]
			}
			return runRecord(env, opts)
		}
	}
}

// runRecord reads the record opts names and prints its encoding or digest.
func runRecord(env *cli.Env, opts recordOptions) error {
	name := opts.file
	if name == "" || name == "-" {
		name = "stdin"
	}
	b, err := readRecordInput(env, opts.file, name)
	if err != nil {
		return err
	}
	var v inventory.Value
	if !opts.wire && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(`["pypto.identity",`)) {
		// Valid JSON too, but read as a list it is a different record.
		fmt.Fprintf(env.Stderr, "%s: note: %s looks like an encoded record, read here as plain JSON (a list); pass --wire to decode it\n", env.Prog, name)
	}
	if opts.wire {
		if n := len(b); n > 0 && b[n-1] == '\n' {
			b = b[:n-1]
		}
		v, err = inventory.Decode(b)
	} else {
		v, err = inventory.ParseJSON(b)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if opts.digest {
		sum, err := inventory.Digest(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		_, err = fmt.Fprintln(env.Stdout, sum)
		return err
	}
	enc, err := inventory.Encode(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, err = env.Stdout.Write(append(enc, '\n'))
	return err
}

// readRecordInput reads FILE or stdin, at most a little more than
// inventory.MaxRecordBytes, so that the parsers can report an input that
// is too long without reading all of it.
func readRecordInput(env *cli.Env, file, name string) ([]byte, error) {
	r, err := cli.OpenInput(env, file)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, inventory.MaxRecordBytes+2))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}
