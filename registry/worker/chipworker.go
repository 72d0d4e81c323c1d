package worker

import (
	"context"
	"errors"

	"github.com/ptojit/ptojit/registry"
	"github.com/ptojit/ptojit/registry/worker/mailbox"
)

// ChipWorker is the L2 path: one chip child that runs a
// registered handle directly, with no L3 orchestrator (no Run, no task
// queues, no SUB children). It is a Worker of one chip child; Register,
// Unregister and Call share the Worker's registration table and its
// failure contract. Safe for concurrent use; each child's mailbox serializes
// its tasks.
type ChipWorker struct {
	w *Worker
}

// NewChipWorker creates and starts an L2 chip worker: cfg.ChipWorkers must
// be 1 (or 0, meaning 1) and cfg.SubWorkers 0.
func NewChipWorker(ctx context.Context, cfg Config) (*ChipWorker, error) {
	if cfg.ChipWorkers == 0 {
		cfg.ChipWorkers = 1
	}
	if cfg.ChipWorkers != 1 || cfg.SubWorkers != 0 {
		return nil, errors.New("worker: an L2 chip worker has exactly one chip child and no SUB children")
	}
	w, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return &ChipWorker{w: w}, nil
}

// Arena is the tensor arena the chip child shares.
func (c *ChipWorker) Arena() *mailbox.Arena { return c.w.Arena() }

// Register installs a CHIP_CALLABLE blob on the chip child and returns its
// handle.
func (c *ChipWorker) Register(ctx context.Context, blob []byte) (CallableHandle, error) {
	return c.w.Register(ctx, registry.ChipCallableKind, blob)
}

// Unregister consumes h.
func (c *ChipWorker) Unregister(ctx context.Context, h CallableHandle) error {
	return c.w.Unregister(ctx, h)
}

// Call runs one task of h on the chip child and waits for it: the handle is
// validated (live, LOCAL_CHIP, not uncertain), then one TASK round trip.
func (c *ChipWorker) Call(h CallableHandle, args mailbox.TaskArgs) error {
	return c.w.Call(0, h, args)
}

// Close stops the chip child and frees the arena.
func (c *ChipWorker) Close() error { return c.w.Close() }
