package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/filesys/durable"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/worker"
)

const opLong = `Operations are what runtime modules provide: each implementation declares a
namespaced operation name (example.sequence.prefix_sum), an operation version,
a priority and what it accepts (dtypes, ranks, layouts, sync modes, ...).
Resolution checks every implementation of the operation among the enabled
modules against the query, then runs each provider's validate and scratch
query on the actual tensors in a child worker, and orders the compatible ones
by descending priority, then ascending impl_id; every rejected implementation
is listed with its reason.

Query flags (op resolve and op run):
  --op NAME                 the operation (required)
  --version MIN[,MAX]       inclusive op_version interval within one major
                            version (default: the newest major version)
  --backend P               an allowed platform (repeatable; default every one)
  --dtype D --shape N,... [--strides S,...]
                            every tensor of a one-shape operation
  --tensor DTYPE:SHAPE[:STRIDES]
                            one tensor, inputs then outputs (repeatable)
  --require CAP             a required capability (repeatable)
  --numerics N              a required numerical guarantee (repeatable)
  --sync MODE               blocking (default) or async
  --host-budget BYTES, --device-budget BYTES
                            scratch budgets (default unlimited)
  --exact-impl-id ID        that implementation or nothing (no fallback)
  --param NAME[@VERSION]=VALUE
                            an operation parameter (repeatable): VERSION, 1
                            when left out, must be the one the implementation
                            declares; VALUE is read as its declared type

Dtypes: f32, f16, bf16, f64, i64, i32, i16, i8, u8, and the block-quantized
q8x32 and q4x32 (blocks of 32 elements, each an f32 scale and 32 int8, or 32
int4 two to a byte: 36 and 20 bytes). Strides are in elements, the first axis
innermost; 0 means packed. A quantized tensor is described in blocks: its
first axis counts blocks (stride one block), its strides are in blocks.`

func init() {
	register(&cli.Command{
		Name:    "op",
		Usage:   "op <ls|resolve|run>",
		Summary: "list, resolve and run the operations of the enabled modules",
		Long:    opLong,
		Subcommands: []*cli.Command{
			storeCommand("ls", "op ls [--json]", "list the operations, their implementations, priorities and modules", 0, runOpLs),
			{
				Name:    "resolve",
				Usage:   "op resolve --op NAME [query flags] [--json]",
				Summary: "resolve an operation and list every rejected implementation with its reason",
				Long: `Prints the chosen implementation, the other compatible ones in order, and
every rejected one with its reason. --json prints {"chosen": {"impl_id",
"module", "version", "priority", "host_scratch", "device_scratch"},
"compatible": [the same, the chosen one first, then the fallbacks in order],
"rejected": [{"impl_id", "module", "kind", "reason"}]}. Exit status 1 when nothing is compatible.`,
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					o := opFlags(fs)
					o.look = true
					fs.BoolVar(&o.json, "json", false, "print JSON")
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 {
							return cli.Usagef("op resolve: unexpected argument %q", args[0])
						}
						return runOpResolve(ctx, env, o)
					}
				},
			},
			{
				Name:    "run",
				Usage:   "op run --op NAME [query flags] --input FILE --output FILE [--workers N] [--timeout D]",
				Summary: "resolve an operation and execute it on child workers",
				Long: `Resolves like op resolve, reads the inputs from --input (raw little-endian
tensor bytes, inputs concatenated, each by its shape and strides), executes the
chosen implementation on a child worker and writes the outputs, concatenated,
to --output.`,
				Setup: func(fs *pflag.FlagSet) cli.RunFunc {
					o := opFlags(fs)
					fs.StringVar(&o.input, "input", "", "the input tensors' bytes")
					fs.StringVar(&o.output, "output", "", "the file to write the outputs to")
					fs.IntVar(&o.workers, "workers", 1, "chip child workers")
					fs.DurationVar(&o.timeout, "timeout", 0, "give up on the execution after this long, killing its child (0: never)")
					return func(ctx context.Context, env *cli.Env, args []string) error {
						if len(args) > 0 {
							return cli.Usagef("op run: unexpected argument %q", args[0])
						}
						if o.input == "" || o.output == "" {
							return cli.Usagef("op run: --input FILE and --output FILE are required")
						}
						if o.workers < 1 || o.workers > 256 {
							return cli.Usagef("op run: --workers must be 1..256")
						}
						if o.timeout < 0 {
							return cli.Usagef("op run: --timeout must not be negative")
						}
						return runOpRun(ctx, env, o)
					}
				},
			},
		},
	})
}

// opOptions are the flags of op resolve and op run: the query's text and
// the run's own.
type opOptions struct {
	moduleOptions
	q             ops.QueryText
	input, output string
	workers       int
	timeout       time.Duration
}

func opFlags(fs *pflag.FlagSet) *opOptions {
	o := &opOptions{}
	q := &o.q
	fs.StringVar(&o.moduleDir, "module-dir", "", "the module store (default: PTOJIT_MODULE_DIR or the user data directory)")
	fs.StringVar(&q.Op, "op", "", "the operation name")
	fs.StringVar(&q.Version, "version", "", "MIN[,MAX]: the op_version interval")
	fs.StringArrayVar(&q.Backends, "backend", nil, "an allowed platform (repeatable)")
	fs.StringVar(&q.DType, "dtype", "", "the dtype of every tensor")
	fs.StringVar(&q.Shape, "shape", "", "N[,N...]: the shape of every tensor")
	fs.StringVar(&q.Strides, "strides", "", "S[,S...]: the strides of every tensor (elements)")
	fs.StringArrayVar(&q.Tensors, "tensor", nil, "DTYPE:SHAPE[:STRIDES], inputs then outputs (repeatable)")
	fs.StringArrayVar(&q.Require, "require", nil, "a required capability (repeatable)")
	fs.StringArrayVar(&q.Numerics, "numerics", nil, "a required numerical guarantee (repeatable)")
	fs.StringArrayVar(&q.Params, "param", nil, "NAME[@VERSION]=VALUE: an operation parameter (repeatable; VERSION defaults to 1)")
	fs.StringVar(&q.Sync, "sync", "blocking", "the sync mode: blocking or async")
	fs.StringVar(&q.HostBudget, "host-budget", "", "host scratch budget in bytes (default unlimited)")
	fs.StringVar(&q.DeviceBudget, "device-budget", "", "device scratch budget in bytes (default unlimited)")
	fs.StringVar(&q.Exact, "exact-impl-id", "", "take exactly this implementation")
	return o
}

// query turns the flags into a query; errors are usage errors.
func (o *opOptions) query() (ops.Query, error) {
	q, err := o.q.Query()
	if err != nil {
		return q, cli.Usagef("%s", err.Error())
	}
	return q, nil
}

func runOpLs(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	mods, err := s.LoadOrder()
	if err != nil {
		return err
	}
	list, problems := ops.Implementations(mods)
	for _, p := range problems {
		fmt.Fprintf(env.Stderr, "ptojit: warning: %v\n", p)
	}
	if o.json {
		return cli.WriteJSON(env.Stdout, list)
	}
	return ops.WriteImplementations(env.Stdout, list)
}

// withService opens the store, starts workers children on the platform and
// runtime of the operation's implementations, and runs fn with a Service.
func withService(ctx context.Context, env *cli.Env, o *opOptions, workers int, fn func(*ops.Service, *worker.Worker) error) error {
	return withStore(ctx, env, o.moduleOptions, func(ctx context.Context, s *module.Store) error {
		return ops.WithService(ctx, s, o.q.Op, workers, []string{workerChildCommand}, env.Stderr, fn)
	})
}

func runOpResolve(ctx context.Context, env *cli.Env, o *opOptions) error {
	q, err := o.query()
	if err != nil {
		return err
	}
	return withService(ctx, env, o, 1, func(svc *ops.Service, w *worker.Worker) error {
		h, res, err := svc.Resolve(ctx, q)
		var nf *ops.NotFoundError
		if err != nil && !errors.As(err, &nf) {
			return err
		}
		if h != nil {
			if err := h.Release(ctx); err != nil {
				return err
			}
		}
		r := ops.NewResolution(res)
		if o.json {
			err = cli.WriteJSON(env.Stdout, r)
		} else {
			err = r.WriteText(env.Stdout)
		}
		if err != nil {
			return err
		}
		if nf != nil {
			why := ""
			if len(res.Rejected) == 0 {
				why = ": no enabled module provides it"
			}
			fmt.Fprintf(env.Stderr, "ptojit: no compatible implementation of %s%s\n", q.OpName, why)
			return cli.Exit(cli.ExitFailure)
		}
		return nil
	})
}

func runOpRun(ctx context.Context, env *cli.Env, o *opOptions) error {
	q, err := o.query()
	if err != nil {
		return err
	}
	input, err := os.ReadFile(env.Abs(o.input))
	if err != nil {
		return fmt.Errorf("op run: %w", err)
	}
	return withService(ctx, env, o, o.workers, func(svc *ops.Service, w *worker.Worker) error {
		h, res, err := svc.Resolve(ctx, q)
		if err != nil {
			var nf *ops.NotFoundError
			if errors.As(err, &nf) {
				ops.NewResolution(res).WriteText(env.Stderr)
			}
			return err
		}
		defer h.Release(ctx)
		out, err := ops.RunBytes(ctx, h, w, input, o.input, o.timeout)
		if err != nil {
			return err
		}
		if err := durable.WriteFile(env.Abs(o.output), out, 0o644); err != nil {
			return fmt.Errorf("op run: %w", err)
		}
		d := h.Describe()
		fmt.Fprintf(env.Stdout, "ran %s (%s, module %s@%s): %d output bytes\n", d.OpName, d.ImplID, d.Module, d.ModuleVersion, len(out))
		return nil
	})
}
