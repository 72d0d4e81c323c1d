package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/filesys/durable"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/opquery"
	"github.com/ptojit/ptojit/registry/ops"
	"github.com/ptojit/ptojit/registry/semver"
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

type opOptions struct {
	moduleOptions
	op, version, dtype, shape, strides   string
	backends, tensors, require, numerics []string
	params                               []string
	sync                                 string
	hostBudget, deviceBudget             string
	exact                                string
	input, output                        string
	workers                              int
	timeout                              time.Duration
}

func opFlags(fs *pflag.FlagSet) *opOptions {
	o := &opOptions{}
	fs.StringVar(&o.moduleDir, "module-dir", "", "the module store (default: PTOJIT_MODULE_DIR or the user data directory)")
	fs.StringVar(&o.op, "op", "", "the operation name")
	fs.StringVar(&o.version, "version", "", "MIN[,MAX]: the op_version interval")
	fs.StringArrayVar(&o.backends, "backend", nil, "an allowed platform (repeatable)")
	fs.StringVar(&o.dtype, "dtype", "", "the dtype of every tensor")
	fs.StringVar(&o.shape, "shape", "", "N[,N...]: the shape of every tensor")
	fs.StringVar(&o.strides, "strides", "", "S[,S...]: the strides of every tensor (elements)")
	fs.StringArrayVar(&o.tensors, "tensor", nil, "DTYPE:SHAPE[:STRIDES], inputs then outputs (repeatable)")
	fs.StringArrayVar(&o.require, "require", nil, "a required capability (repeatable)")
	fs.StringArrayVar(&o.numerics, "numerics", nil, "a required numerical guarantee (repeatable)")
	fs.StringArrayVar(&o.params, "param", nil, "NAME[@VERSION]=VALUE: an operation parameter (repeatable; VERSION defaults to 1)")
	fs.StringVar(&o.sync, "sync", "blocking", "the sync mode: blocking or async")
	fs.StringVar(&o.hostBudget, "host-budget", "", "host scratch budget in bytes (default unlimited)")
	fs.StringVar(&o.deviceBudget, "device-budget", "", "device scratch budget in bytes (default unlimited)")
	fs.StringVar(&o.exact, "exact-impl-id", "", "take exactly this implementation")
	return o
}

func parseList(s, what string) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, cli.Usagef("%s %q: not a list of non-negative integers", what, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// query turns the flags into a query; errors are usage errors.
func (o *opOptions) query() (ops.Query, error) {
	q := ops.Query{OpName: o.op, Backends: o.backends, Capabilities: o.require, Numerics: o.numerics,
		ExactImplID: o.exact, HostBudget: ops.Unlimited, DeviceBudget: ops.Unlimited}
	if o.op == "" {
		return q, cli.Usagef("--op NAME is required")
	}
	if !opquery.ValidName(o.op, 2) {
		// A malformed name is the command line's mistake, not a lookup
		// that found nothing: exit 2, before the store is opened.
		return q, cli.Usagef("--op %q: not a namespaced operation name (dotted [a-z0-9_-] components, at least two, e.g. example.sequence.prefix_sum)", o.op)
	}
	if o.version != "" {
		lo, hi, _ := strings.Cut(o.version, ",")
		q.MinVersion, q.MaxVersion = lo, hi
		for _, v := range []string{lo, hi} {
			if _, err := semver.Parse(v); v != "" && err != nil {
				return q, cli.Usagef("--version %s: %v", o.version, err)
			}
		}
	}
	m, err := ops.ParseSyncMode(o.sync)
	if err != nil {
		return q, cli.Usagef("--sync: %v", err)
	}
	for _, s := range o.params {
		p, err := parseParam(s)
		if err != nil {
			return q, err
		}
		q.Params = append(q.Params, p)
	}
	q.SyncMode = m
	for _, b := range []struct {
		s   string
		dst *int64
	}{{o.hostBudget, &q.HostBudget}, {o.deviceBudget, &q.DeviceBudget}} {
		if b.s == "" {
			continue
		}
		v, err := strconv.ParseInt(b.s, 10, 64)
		if err != nil || v < 0 {
			return q, cli.Usagef("budget %q: not a number of bytes", b.s)
		}
		*b.dst = v
	}
	if (o.dtype != "" || o.shape != "" || o.strides != "") && len(o.tensors) > 0 {
		return q, cli.Usagef("give --dtype/--shape/--strides or --tensor, not both")
	}
	if len(o.tensors) == 0 {
		if o.dtype == "" || o.shape == "" {
			return q, cli.Usagef("describe the tensors: --dtype D --shape N[,N...], or --tensor DTYPE:SHAPE[:STRIDES]...")
		}
		t, err := parseTensor(o.dtype, o.shape, o.strides)
		if err != nil {
			return q, err
		}
		q.Tensors, q.Uniform = []ops.Tensor{t}, true
		return q, nil
	}
	for _, s := range o.tensors {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return q, cli.Usagef("--tensor %q: want DTYPE:SHAPE[:STRIDES]", s)
		}
		parts = append(parts, "")
		t, err := parseTensor(parts[0], parts[1], parts[2])
		if err != nil {
			return q, err
		}
		q.Tensors = append(q.Tensors, t)
	}
	return q, nil
}

// parseParam reads NAME[@VERSION]=VALUE; the value's type is the
// descriptor's, checked at resolution.
func parseParam(s string) (ops.Param, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return ops.Param{}, cli.Usagef("--param %q: want NAME[@VERSION]=VALUE", s)
	}
	p := ops.Param{Name: name, Version: 1, Value: value}
	if n, v, ok := strings.Cut(name, "@"); ok {
		ver, err := strconv.ParseUint(v, 10, 32)
		if err != nil || ver == 0 {
			return ops.Param{}, cli.Usagef("--param %q: version %q is not a number from 1", s, v)
		}
		p.Name, p.Version = n, uint32(ver)
	}
	return p, nil
}

func parseTensor(dtype, shape, strides string) (ops.Tensor, error) {
	d, err := ops.ParseDType(dtype)
	if err != nil || d == ops.DTypeAny {
		return ops.Tensor{}, cli.Usagef("dtype %q: a concrete dtype (f32, f16, bf16, f64, i64, i32, i16, i8, u8, q8x32, q4x32)", dtype)
	}
	sh, err := parseList(shape, "shape")
	if err != nil {
		return ops.Tensor{}, err
	}
	st, err := parseList(strides, "strides")
	if err != nil {
		return ops.Tensor{}, err
	}
	if len(sh) > ops.MaxRank || (len(st) > 0 && len(st) != len(sh)) {
		return ops.Tensor{}, cli.Usagef("shape %q with strides %q: at most %d dimensions, one stride per dimension", shape, strides, ops.MaxRank)
	}
	return ops.Tensor{DType: d, Shape: sh, Strides: st}, nil
}

type opImpl struct {
	OpName        string   `json:"op_name"`
	OpVersion     string   `json:"op_version"`
	ImplID        string   `json:"impl_id"`
	Priority      int64    `json:"priority"`
	Module        string   `json:"module"`
	ModuleVersion string   `json:"module_version"`
	Platforms     []string `json:"platforms"`
}

func runOpLs(ctx context.Context, env *cli.Env, s *module.Store, o moduleOptions, args []string) error {
	mods, err := s.LoadOrder()
	if err != nil {
		return err
	}
	cands, problems := ops.CandidatesOf(mods)
	for _, p := range problems {
		fmt.Fprintf(env.Stderr, "ptojit: warning: %v\n", p)
	}
	list := []opImpl{}
	for _, c := range cands {
		var plats []string
		for _, cb := range c.Desc.Callables {
			plats = append(plats, cb.Platform)
		}
		list = append(list, opImpl{OpName: c.Desc.OpName, OpVersion: c.Desc.OpVersion.String(), ImplID: c.Desc.ImplID,
			Priority: c.Desc.Priority, Module: c.Module, ModuleVersion: c.ModuleVersion, Platforms: plats})
	}
	slices.SortFunc(list, func(a, b opImpl) int {
		if c := strings.Compare(a.OpName, b.OpName); c != 0 {
			return c
		}
		if a.Priority != b.Priority {
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ImplID, b.ImplID)
	})
	if o.json {
		return cli.WriteJSON(env.Stdout, list)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tVERSION\tIMPLEMENTATION\tPRIORITY\tMODULE\tPLATFORMS")
	for _, x := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s@%s\t%s\n", x.OpName, x.OpVersion, x.ImplID, x.Priority, x.Module, x.ModuleVersion, strings.Join(x.Platforms, ","))
	}
	return tw.Flush()
}

// withService opens the store, starts workers children on the platform and
// runtime of the operation's implementations, and runs fn with a Service.
func withService(ctx context.Context, env *cli.Env, o *opOptions, workers int, fn func(*ops.Service, *worker.Worker) error) error {
	return withStore(ctx, env, o.moduleOptions, func(ctx context.Context, s *module.Store) error {
		mods, err := s.LoadOrder()
		if err != nil {
			return err
		}
		cands, _ := ops.CandidatesOf(mods)
		// The workers run the runtime most implementations of the
		// operation are built for (others are rejected by name).
		count := map[string]int{}
		for _, c := range cands {
			if c.Desc.OpName == o.op {
				count[c.Runtime]++
			}
		}
		runtime := "tensormap_and_ringbuffer"
		best := 0
		for r, n := range count {
			if n > best || n == best && r < runtime {
				runtime, best = r, n
			}
		}
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("op: locating this program to start children: %w", err)
		}
		w, err := worker.New(worker.Config{ChildCommand: []string{exe, workerChildCommand}, ChipWorkers: workers,
			Platform: "a2a3sim", Runtime: runtime, Stderr: env.Stderr})
		if err != nil {
			return err
		}
		defer w.Close()
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("op: starting children: %w", err)
		}
		svc := ops.New(ops.Config{Store: s, Worker: w, ChipWorkers: workers, Platform: "a2a3sim", Runtime: runtime})
		err = fn(svc, w)
		if cerr := svc.Close(context.WithoutCancel(ctx)); err == nil {
			err = cerr
		}
		return err
	})
}

type resolveJSON struct {
	Chosen *chosenJSON `json:"chosen"`
	// Compatible lists every compatible candidate in order: the chosen
	// one first, then the fallbacks.
	Compatible []chosenJSON    `json:"compatible"`
	Rejected   []rejectionJSON `json:"rejected"`
}

type chosenJSON struct {
	ImplID        string `json:"impl_id"`
	Module        string `json:"module"`
	Version       string `json:"version"`
	Priority      int64  `json:"priority"`
	HostScratch   uint64 `json:"host_scratch"`
	DeviceScratch uint64 `json:"device_scratch"`
}

type rejectionJSON struct {
	ImplID string `json:"impl_id"`
	Module string `json:"module"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
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
		if err := printResolution(env.Stdout, res, o.json); err != nil {
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

func printResolution(out io.Writer, res *ops.Result, asJSON bool) error {
	if asJSON {
		j := resolveJSON{Compatible: []chosenJSON{}, Rejected: []rejectionJSON{}}
		for _, c := range res.Compatible {
			j.Compatible = append(j.Compatible, chosenJSON{ImplID: c.ImplID, Module: c.Module, Version: c.Version, Priority: c.Priority,
				HostScratch: c.HostScratch, DeviceScratch: c.DeviceScratch})
		}
		if len(j.Compatible) > 0 {
			j.Chosen = &j.Compatible[0]
		}
		for _, r := range res.Rejected {
			j.Rejected = append(j.Rejected, rejectionJSON{ImplID: r.ImplID, Module: r.Module, Kind: r.Kind, Reason: r.Reason})
		}
		return cli.WriteJSON(out, j)
	}
	var b strings.Builder
	for i, c := range res.Compatible {
		what := "fallback"
		if i == 0 {
			what = "chosen  "
		}
		fmt.Fprintf(&b, "%s  %s  module %s  version %s  priority %d", what, c.ImplID, c.Module, c.Version, c.Priority)
		if c.HostScratch > 0 || c.DeviceScratch > 0 {
			fmt.Fprintf(&b, "  scratch host %d device %d", c.HostScratch, c.DeviceScratch)
		}
		b.WriteString("\n")
	}
	for _, r := range res.Rejected {
		fmt.Fprintf(&b, "rejected  %s  module %s: %s\n", r.ImplID, r.Module, r.Reason)
	}
	_, err := io.WriteString(out, b.String())
	return err
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
				printResolution(env.Stderr, res, false)
			}
			return err
		}
		defer h.Release(ctx)
		d := h.Describe()
		args, bufs, err := opRunArgs(w, d, input, o.input)
		defer func() {
			for _, b := range bufs {
				b.Free()
			}
		}()
		if err != nil {
			return err
		}
		ectx := ctx
		if o.timeout > 0 {
			var cancel context.CancelFunc
			ectx, cancel = context.WithTimeoutCause(ctx, o.timeout, fmt.Errorf("--timeout %s passed", o.timeout))
			defer cancel()
		}
		if err := h.Execute(ectx, args); err != nil {
			return err
		}
		var out []byte
		for i := d.Inputs; i < len(args.Tensors); i++ {
			n, _ := d.Tensors[i].Bytes()
			out = append(out, bufBytes(bufs[i])[:n]...)
		}
		if err := durable.WriteFile(env.Abs(o.output), out, 0o644); err != nil {
			return fmt.Errorf("op run: %w", err)
		}
		fmt.Fprintf(env.Stdout, "ran %s (%s, module %s@%s): %d output bytes\n", d.OpName, d.ImplID, d.Module, d.ModuleVersion, len(out))
		return nil
	})
}

// opRunArgs allocates in w's arena the tensors and scratch buffers of the
// operation d describes and copies input, the bytes of the input tensors
// in order (read from the file inputName), into them. It returns the
// buffers it allocated even with an error: the caller frees them.
func opRunArgs(w *worker.Worker, d ops.Description, input []byte, inputName string) (args ops.Args, bufs []worker.Buffer, err error) {
	alloc := func(n uint64) (worker.Buffer, error) {
		b, err := w.Arena().Alloc(max(n, 1))
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	off := 0
	for i, t := range d.Tensors {
		n, _ := t.Bytes()
		b, err := alloc(n)
		if err != nil {
			return args, bufs, fmt.Errorf("op run: tensor %d: %w", i, err)
		}
		dt, ok := execDType(t.DType)
		if !ok {
			return args, bufs, fmt.Errorf("op run: tensor %d: dtype %s cannot be executed on the sim workers (f32, i32, f16, q8x32, q4x32)", i, t.DType)
		}
		if i < d.Inputs {
			if off+int(n) > len(input) {
				return args, bufs, fmt.Errorf("op run: %s holds %d bytes; the inputs need %d or more", inputName, len(input), off+int(n))
			}
			copy(bufBytes(b), input[off:off+int(n)])
			off += int(n)
		}
		// The bytes it spans by its strides: the input file holds them,
		// rows at their outer strides, as the output file will.
		tt := b.Tensor(dt, t.Shape...)
		tt.Nbytes, tt.Strides = n, t.Strides
		args.Tensors = append(args.Tensors, tt)
	}
	if off != len(input) {
		return args, bufs, fmt.Errorf("op run: %s holds %d bytes; the inputs take exactly %d", inputName, len(input), off)
	}
	for _, sc := range []struct {
		n   uint64
		dst **worker.Buffer
	}{{d.DeviceScratch, &args.DeviceScratch}, {d.HostScratch, &args.HostScratch}} {
		if sc.n > 0 {
			b, err := alloc(sc.n)
			if err != nil {
				return args, bufs, fmt.Errorf("op run: scratch: %w", err)
			}
			*sc.dst = &b
		}
	}
	return args, bufs, nil
}

func execDType(d ops.DType) (worker.DType, bool) {
	switch d {
	case ops.F32:
		return worker.Float32, true
	case ops.I32:
		return worker.Int32, true
	case ops.F16:
		return worker.Float16, true
	case ops.Q8x32:
		return worker.Q8x32, true
	case ops.Q4x32:
		return worker.Q4x32, true
	}
	return 0, false
}

// bufBytes returns the bytes of an arena buffer.
func bufBytes(b worker.Buffer) []byte {
	f := b.Float32s()
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}
