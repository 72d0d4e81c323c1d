package clientcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/registry"
)

func init() {
	register(&cli.Command{
		Name:    "callable",
		Usage:   "callable inspect BLOB [--json] [--platform P --runtime R]",
		Summary: "decode ChipCallable blobs",
		Subcommands: []*cli.Command{{
			Name:    "inspect",
			Usage:   "callable inspect BLOB [--json] [--platform P --runtime R]",
			Summary: "print a ChipCallable blob's header, signature and children",
			Long: `Validates BLOB ("-" reads standard input) against the ChipCallable layout
(9376-byte header, orchestration binary, children at 64-byte-aligned
offsets, every size and offset checked against the blob length) and prints
the header fields, the public signature and its schema hash, and each child
CoreCallable: func id, storage offset, signature, resolved address and the
size and SHA-256 of its binary. "canonical" says whether ptojit's writer
would produce exactly these bytes (zero padding, children packed).

With --platform and --runtime the callable's hashid is printed too.

Digests print as 64 lowercase hex digits without a prefix (sha256,
signature_schema_hash, binary_sha256), as in every JSON output of ptojit;
only a hashid carries "sha256:".

Exit codes: 0 printed; 1 invalid blob (CALLABLE_BLOB_INVALID) or unreadable
file; 2 usage error.`,
			Setup: inspectSetup,
		}},
	})
}

func inspectSetup(fs *pflag.FlagSet) cli.RunFunc {
	var o struct {
		json              bool
		platform, runtime string
	}
	fs.BoolVar(&o.json, "json", false, "print the decoded blob as JSON")
	fs.StringVar(&o.platform, "platform", "", "also print the hashid for this platform (with --runtime)")
	fs.StringVar(&o.runtime, "runtime", "", "also print the hashid for this runtime (with --platform)")
	return func(ctx context.Context, env *cli.Env, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("callable inspect: want exactly one BLOB, have %d arguments", len(args))
		}
		if (o.platform == "") != (o.runtime == "") {
			return cli.Usagef("callable inspect: --platform and --runtime go together")
		}
		if o.platform != "" {
			if _, err := registry.TargetArch(o.platform); err != nil {
				return cli.Usagef("callable inspect: %v", err)
			}
		}
		blob, err := readCallablePayload(env, args[0])
		if err != nil {
			return err
		}
		rep, err := inspectBlob(blob, o.platform, o.runtime)
		if err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", callableInputName(args[0]), err))
		}
		if o.json {
			return cli.WriteJSON(env.Stdout, rep)
		}
		return writeInspect(env.Stdout, rep)
	}
}

// callableReport is the --json form of ptojit callable inspect.
type callableReport struct {
	Size                int           `json:"size"`
	SHA256              string        `json:"sha256"`
	Canonical           bool          `json:"canonical"`
	Hashid              string        `json:"hashid,omitempty"`
	Platform            string        `json:"platform,omitempty"`
	Runtime             string        `json:"runtime,omitempty"`
	FuncName            string        `json:"func_name"`
	ConfigName          string        `json:"config_name"`
	ScalarCount         int32         `json:"scalar_count"`
	Signature           []string      `json:"signature"`
	SignatureSchemaHash string        `json:"signature_schema_hash"`
	BinarySize          int           `json:"binary_size"`
	BinarySHA256        string        `json:"binary_sha256"`
	Children            []childReport `json:"children"`
}

type childReport struct {
	Index        int      `json:"index"`
	FuncID       int32    `json:"func_id"`
	Offset       uint64   `json:"offset"`
	Signature    []string `json:"signature"`
	ResolvedAddr uint64   `json:"resolved_addr"`
	BinarySize   int      `json:"binary_size"`
	BinarySHA256 string   `json:"binary_sha256"`
}

func callableSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func callableDirections(sig []registry.Direction) []string {
	out := make([]string, len(sig))
	for i, d := range sig {
		out[i] = d.String()
	}
	return out
}

func inspectBlob(blob []byte, platform, runtime string) (*callableReport, error) {
	c, err := registry.ParseChipCallable(blob)
	if err != nil {
		return nil, err
	}
	offsets, err := registry.ChildOffsets(blob)
	if err != nil {
		return nil, err
	}
	ssh := registry.SignatureSchemaHash(c.Signature)
	rep := &callableReport{
		Size: len(blob), SHA256: callableSHA256(blob), Canonical: registry.IsCanonical(blob),
		FuncName: c.FuncName, ConfigName: c.ConfigName, ScalarCount: c.ScalarCount,
		Signature: callableDirections(c.Signature), SignatureSchemaHash: hex.EncodeToString(ssh[:]),
		BinarySize: len(c.Binary), BinarySHA256: callableSHA256(c.Binary),
		Children: []childReport{},
	}
	if platform != "" {
		h, err := registry.ChipHashid(platform, runtime, blob)
		if err != nil {
			return nil, err
		}
		rep.Hashid, rep.Platform, rep.Runtime = h.String(), platform, runtime
	}
	for i, ch := range c.Children {
		rep.Children = append(rep.Children, childReport{
			Index: i, FuncID: ch.FuncID, Offset: offsets[i], Signature: callableDirections(ch.Core.Signature),
			ResolvedAddr: ch.Core.ResolvedAddr, BinarySize: len(ch.Core.Binary), BinarySHA256: callableSHA256(ch.Core.Binary),
		})
	}
	return rep, nil
}

func callableSigText(sig []string) string {
	if len(sig) == 0 {
		return "(none)"
	}
	return strings.Join(sig, " ")
}

func writeInspect(w io.Writer, r *callableReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "size                   %d bytes\n", r.Size)
	fmt.Fprintf(&b, "sha256                 %s\n", r.SHA256)
	fmt.Fprintf(&b, "canonical              %v\n", r.Canonical)
	if r.Hashid != "" {
		fmt.Fprintf(&b, "hashid                 %s (%s, %s)\n", r.Hashid, r.Platform, r.Runtime)
	}
	fmt.Fprintf(&b, "func_name              %q\n", r.FuncName)
	fmt.Fprintf(&b, "config_name            %q\n", r.ConfigName)
	fmt.Fprintf(&b, "scalar_count           %d\n", r.ScalarCount)
	fmt.Fprintf(&b, "signature              [%d] %s\n", len(r.Signature), callableSigText(r.Signature))
	fmt.Fprintf(&b, "signature_schema_hash  %s\n", r.SignatureSchemaHash)
	fmt.Fprintf(&b, "orchestration binary   %d bytes, sha256 %s\n", r.BinarySize, r.BinarySHA256)
	fmt.Fprintf(&b, "children               %d\n", len(r.Children))
	for _, c := range r.Children {
		fmt.Fprintf(&b, "  [%d] func_id %d, offset %d, signature [%d] %s, resolved_addr %#x, binary %d bytes, sha256 %s\n",
			c.Index, c.FuncID, c.Offset, len(c.Signature), callableSigText(c.Signature), c.ResolvedAddr, c.BinarySize, c.BinarySHA256)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
