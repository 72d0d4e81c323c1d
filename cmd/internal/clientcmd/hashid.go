package clientcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/registry"
)

// maxCallablePayload bounds the ChipCallable blobs and SPYC envelopes the client
// reads: storage offsets are 32-bit, so no valid blob is larger.
const maxCallablePayload = registry.ChipHeaderSize + 1<<32

func init() {
	register(&cli.Command{
		Name:    "hashid",
		Usage:   "hashid (--platform P --runtime R BLOB | --python SPYC_FILE) [--json]",
		Summary: "print the callable hashid of a ChipCallable blob or a SPYC Python payload",
		Long: `A hashid ("sha256:" + 64 lowercase hex digits) is the stable identity of a
callable across a parent process and its local child workers: the SHA-256 of
a canonical descriptor, byte-compatible with the simpler runtime.

With --platform and --runtime, BLOB is a ChipCallable blob ("-" reads
standard input). Its layout is validated and its hashid is computed from the
CHIP_CALLABLE descriptor: target arch, platform, runtime, the blob's SHA-256
and the hash of its public signature. The same blob has a different hashid
on another platform or runtime.

With --python, SPYC_FILE is a Python callable payload: a 16-byte SPYC header
(magic, version 1, serializer 1 = cloudpickle, flags 0, payload size) then
the serializer output. The hashid covers the header's version and serializer
and the SHA-256 of the serializer output.

--json prints the hashid with its descriptor fields and bytes. Digests
(blob_sha256, signature_schema_hash, payload_sha256) are 64 lowercase hex
digits without a prefix, as in every JSON output of ptojit; only a hashid
carries "sha256:".

Exit codes: 0 printed; 1 a failure reading the file; 2 usage error
(including an unknown platform, PLATFORM_UNSUPPORTED, or an empty runtime)
or invalid input: a missing file, or an invalid blob or payload
(CALLABLE_BLOB_INVALID, SPYC_PAYLOAD_INVALID), named in the message, as
"callable inspect" and "run --callable" exit on the same file.

Examples:
  ptojit hashid --platform a2a3sim --runtime tensormap_and_ringbuffer testdata/examples/vadd/out/chip_callable.bin
  ptojit hashid --python task.spyc
  ptojit hashid check sha256:fec44f85016afb8fa70c11592b6af90b70f6575ee64242070b3684e7c9cc6abd`,
		Setup: hashidSetup,
		Subcommands: []*cli.Command{{
			Name:    "check",
			Usage:   "hashid check STRING",
			Summary: `check that STRING is "sha256:" + 64 lowercase hex digits`,
			Long: `Exits 0, printing nothing, when STRING is a well-formed hashid; otherwise
prints the reason with code HASHID_FORMAT_INVALID and exits 1. Uppercase
hex, another prefix, whitespace and any length but 64 digits are invalid.`,
			Setup: func(fs *pflag.FlagSet) cli.RunFunc {
				return func(ctx context.Context, env *cli.Env, args []string) error {
					if len(args) != 1 {
						return cli.Usagef("hashid check: want exactly one STRING, have %d arguments", len(args))
					}
					if _, err := registry.ParseHashid(args[0]); err != nil {
						return err
					}
					return nil
				}
			},
		}},
	})
}

type hashidOptions struct {
	platform, runtime, python string
	json                      bool
}

func hashidSetup(fs *pflag.FlagSet) cli.RunFunc {
	var o hashidOptions
	fs.StringVar(&o.platform, "platform", "", "platform of a ChipCallable blob: a2a3sim, a2a3, a5sim or a5")
	fs.StringVar(&o.runtime, "runtime", "", "runtime of a ChipCallable blob, e.g. tensormap_and_ringbuffer")
	fs.StringVar(&o.python, "python", "", "compute the hashid of this SPYC payload file (\"-\" for standard input)")
	fs.BoolVar(&o.json, "json", false, "print the hashid, the descriptor fields and the descriptor bytes as JSON")
	return func(ctx context.Context, env *cli.Env, args []string) error {
		return runHashid(env, o, args)
	}
}

// hashidReport is the --json output of ptojit hashid.
type hashidReport struct {
	Hashid              string `json:"hashid"`
	Kind                string `json:"kind"`
	TargetArch          string `json:"target_arch,omitempty"`
	Platform            string `json:"platform,omitempty"`
	Runtime             string `json:"runtime,omitempty"`
	BlobSHA256          string `json:"blob_sha256,omitempty"`
	SignatureSchemaHash string `json:"signature_schema_hash,omitempty"`
	PayloadFormat       *uint8 `json:"payload_format_version,omitempty"`
	SerializerID        *uint8 `json:"serializer_id,omitempty"`
	PayloadSHA256       string `json:"payload_sha256,omitempty"`
	Descriptor          string `json:"descriptor"`
}

func runHashid(env *cli.Env, o hashidOptions, args []string) error {
	var rep hashidReport
	switch {
	case o.python != "":
		if o.platform != "" || o.runtime != "" || len(args) > 0 {
			return cli.Usagef("hashid: --python takes no BLOB, --platform or --runtime")
		}
		spyc, err := readCallablePayload(env, o.python)
		if err != nil {
			return err
		}
		h, payload, err := registry.ParseSPYC(spyc)
		if err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", o.python, err))
		}
		desc, err := registry.PythonDescriptor(spyc)
		if err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", o.python, err))
		}
		sum := sha256.Sum256(payload)
		rep = hashidReport{
			Hashid: registry.ComputeHashid(desc).String(), Kind: registry.PythonSerializedKind.String(),
			PayloadFormat: &h.Version, SerializerID: &h.Serializer,
			PayloadSHA256: hex.EncodeToString(sum[:]), Descriptor: hex.EncodeToString(desc),
		}
	default:
		if o.platform == "" || o.runtime == "" {
			return cli.Usagef("hashid: want --platform and --runtime with a BLOB, or --python SPYC_FILE")
		}
		if len(args) != 1 {
			return cli.Usagef("hashid: want exactly one BLOB, have %d arguments", len(args))
		}
		arch, err := registry.TargetArch(o.platform)
		if err != nil {
			return cli.Usagef("hashid: %v", err)
		}
		blob, err := readCallablePayload(env, args[0])
		if err != nil {
			return err
		}
		desc, err := registry.ChipDescriptor(o.platform, o.runtime, blob)
		if err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", args[0], err))
		}
		sig, _ := registry.ChipSignature(blob)
		sum, ssh := sha256.Sum256(blob), registry.SignatureSchemaHash(sig)
		rep = hashidReport{
			Hashid: registry.ComputeHashid(desc).String(), Kind: registry.ChipCallableKind.String(),
			TargetArch: arch, Platform: o.platform, Runtime: o.runtime,
			BlobSHA256: hex.EncodeToString(sum[:]), SignatureSchemaHash: hex.EncodeToString(ssh[:]),
			Descriptor: hex.EncodeToString(desc),
		}
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, rep)
	}
	_, err := fmt.Fprintln(env.Stdout, rep.Hashid)
	return err
}

// readCallablePayload reads a whole FILE|- argument, refusing more than maxCallablePayload
// bytes.
func readCallablePayload(env *cli.Env, name string) ([]byte, error) {
	r, err := cli.OpenInput(env, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, as typed
		}
		return nil, cli.Invalid(fmt.Errorf("%s: %w", callableInputName(name), err))
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxCallablePayload+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", callableInputName(name), err)
	}
	if len(b) > maxCallablePayload {
		return nil, cli.Invalid(fmt.Errorf("%s: larger than %d bytes, the largest valid payload", callableInputName(name), maxCallablePayload))
	}
	return b, nil
}

func callableInputName(name string) string {
	if name == "" || name == "-" {
		return "standard input"
	}
	return name
}
