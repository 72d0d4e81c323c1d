package clientcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/inventory"
)

const recordInputHelp = `Input forms:
  JSON (default)
      object -> dict, array -> list, true/false -> bool, null -> None,
      integer literal -> int of any size (at most 4300 digits, as in
      Python), any other number -> float64 (1E400 is inf, 1e-400 is 0.0;
      NaN, Infinity and -Infinity are accepted), string -> str. A \uXXXX
      escape is the code point it names, an unpaired surrogate included;
      an escaped surrogate pair is one character, as in Python's
      json.loads. The last of duplicate keys wins.
      An object whose only key is a tag is the value it names:
        {"$tuple": [...]}              a tuple
        {"$bytes": "<hex>"}            bytes
        {"$float": "<16 hex digits>"}  a float64 by its big-endian
                                       IEEE-754 bits (NaN payloads, -0.0)
        {"$str": "<hex>"}              a str by its UTF-8 form, surrogates
                                       as 3 bytes (for a lone high
                                       surrogate followed by a lone low
                                       one, which \u escapes would join)
        {"$dict": [[key, value], ...]} a dict given as pairs (keys may
                                       then be "$str" values)
      A dict key that starts with "$" is written with one more "$":
      {"$$id": 1} is the dict {"$id": 1}. "record decode" prints this form.
  --wire
      an encoded record, accepted only when exactly canonical: schema 1,
      no whitespace, known tags, dict keys sorted by code point and unique,
      lowercase hex of even length, ints without leading zeros or "-0",
      floats as exactly 16 hex digits. A single trailing newline after the
      record is tolerated (so files written by "record encode" read back);
      nothing else may follow it.
  --lines
      one record per line (JSON Lines, or encoded records with --wire),
      one result printed per line; blank lines are errors.

Input that is not valid exits 2 (invalid input) with the byte offset of the first problem
(and with --lines, the line number), printing nothing.
Inputs are limited to 64 MiB and 512 levels of nesting.`

func init() {
	register(&cli.Command{
		Name:    "record",
		Usage:   "record <encode|digest|decode> [--wire] [--lines] [FILE|-]",
		Summary: "print an identity record's canonical encoding, its digest or its JSON form",
		Long: `An identity record is a typed value (None, bool, int, float64, str, bytes,
list, tuple, dict with str keys) whose canonical encoding is byte-compatible
with pypto._identity schema 1; its digest is the SHA-256 of that encoding.
Cache keys, content fingerprints and toolchain identities are such digests.

` + recordInputHelp,
		Subcommands: []*cli.Command{
			{
				Name:    "encode",
				Usage:   "record encode [--wire] [--lines] [FILE|-]",
				Summary: "print the canonical encoding of a record, followed by a newline",
				Long: `Reads one record from FILE, or from standard input when FILE is "-" or
absent, and prints its canonical encoding followed by a newline.

` + recordInputHelp + `

Examples:
  echo '{"rows": 32, "cols": 64}' | ptojit record encode
  echo '{"shape": {"$tuple": [32, 64]}, "seed": {"$bytes": "00ff"}}' | ptojit record encode
  ptojit record encode --wire options.rec   # check that a file is canonical`,
				Setup: recordSetup(recordEncode),
			},
			{
				Name:    "digest",
				Usage:   "record digest [--wire] [--lines] [FILE|-]",
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
				Setup: recordSetup(recordDigest),
			},
			{
				Name:    "decode",
				Usage:   "record decode [--json] [--lines] [FILE|-]",
				Summary: "print an encoded record in the JSON form, which record encode reads back",
				Long: `Reads one encoded record (accepted only when exactly canonical; a single
trailing newline is tolerated) from FILE, or from standard input when FILE
is "-" or absent, and prints its JSON form on one line: plain JSON where it
says the same thing, the tags of "record encode" for tuples, bytes,
non-finite floats and the other values plain JSON cannot hold. Floats are
written as Python's repr writes them and every non-ASCII character is
escaped, so Python's json.loads reads the output too. "record encode" of
the output gives back the same bytes, for every record.

--json names the output form; it is the only one and the default.

` + recordInputHelp + `

Examples:
  ptojit record decode options.rec
  ptojit record decode options.rec | ptojit record encode | cmp - options.rec`,
				Setup: recordSetup(recordDecode),
			},
		},
	})
}

// recordAction is what runRecord prints.
type recordAction int

const (
	recordEncode recordAction = iota // the canonical encoding
	recordDigest                     // the digest
	recordDecode                     // the JSON form of an encoded record
)

// recordOptions are the inputs of runRecord.
type recordOptions struct {
	action recordAction
	wire   bool   // the input is an encoded record, not JSON
	lines  bool   // one record per line
	file   string // "" or "-" for standard input
}

func recordSetup(action recordAction) func(fs *pflag.FlagSet) cli.RunFunc {
	return func(fs *pflag.FlagSet) cli.RunFunc {
		opts := recordOptions{action: action}
		asJSON := true
		if action == recordDecode {
			opts.wire = true
			fs.BoolVar(&asJSON, "json", true, "print the JSON form (the only output form, and the default)")
		} else {
			fs.BoolVar(&opts.wire, "wire", false, "read an encoded record, accepted only when exactly canonical, instead of JSON")
		}
		fs.BoolVar(&opts.lines, "lines", false, "read one record per line and print one result per line")
		return func(ctx context.Context, env *cli.Env, args []string) error {
			if len(args) > 1 {
				return cli.Usagef("record: want at most one FILE, got %d arguments", len(args))
			}
			if !asJSON {
				return cli.Usagef("record decode: the JSON form is the only output form (--json=false)")
			}
			if len(args) == 1 {
				opts.file = args[0]
			}
			return runRecord(env, opts)
		}
	}
}

// runRecord reads the record(s) opts names and prints the encoding, the
// digest or the JSON form of each. Nothing is printed when any input is
// invalid.
func runRecord(env *cli.Env, opts recordOptions) error {
	name := opts.file
	if name == "" || name == "-" {
		name = "stdin"
	}
	b, err := readRecordInput(env, opts.file, name)
	if errors.Is(err, fs.ErrNotExist) {
		return cli.Invalid(err) // a missing input file, as a missing request
	}
	if err != nil {
		return err
	}
	if !opts.lines {
		if opts.wire {
			if n := len(b); n > 0 && b[n-1] == '\n' {
				b = b[:n-1]
			}
		} else if bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(`["pypto.identity",`)) {
			// Valid JSON too, but read as a list it is a different record.
			fmt.Fprintf(env.Stderr, "%s: note: %s looks like an encoded record, read here as JSON (a list); pass --wire to decode it\n", env.Prog, name)
		}
		out, err := recordOutput(nil, b, opts)
		if err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", name, err))
		}
		_, err = env.Stdout.Write(out)
		return err
	}
	var out []byte
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(b) == 0 {
			break // no lines at all
		}
		if out, err = recordOutput(out, line, opts); err != nil {
			return cli.Invalid(fmt.Errorf("%s: line %d: %w", name, i+1, err))
		}
	}
	_, err = env.Stdout.Write(out)
	return err
}

// recordOutput appends the result of one input record and a newline.
func recordOutput(out, b []byte, opts recordOptions) ([]byte, error) {
	var v inventory.Value
	var err error
	if opts.wire {
		v, err = inventory.Decode(b)
	} else {
		v, err = inventory.ParseJSON(b)
	}
	if err != nil {
		return out, err
	}
	switch opts.action {
	case recordDigest:
		sum, err := inventory.Digest(v)
		if err != nil {
			return out, err
		}
		out = append(out, sum.String()...)
	case recordDecode:
		if out, err = inventory.AppendJSON(out, v); err != nil {
			return out, err
		}
	default:
		if out, err = inventory.AppendEncode(out, v); err != nil {
			return out, err
		}
	}
	return append(out, '\n'), nil
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
