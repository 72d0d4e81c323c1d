package remote

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/ptojit/ptojit/cache"
)

// Chain is the remote tiers of one remote setting, in lookup order (a
// Redis cache in front of a bucket, say). Lookups go through the tiers in
// order; a hit in a later tier is published to the earlier writable ones;
// publications go to every writable tier. Safe for concurrent use.
type Chain struct{ tiers []*Remote }

// NewChain opens a Remote for each of cfgs (see New).
func NewChain(cfgs []Config) (*Chain, error) {
	c := &Chain{}
	for _, cfg := range cfgs {
		r, err := New(cfg)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.tiers = append(c.tiers, r)
	}
	if len(c.tiers) == 0 {
		return nil, &URLError{"no target"}
	}
	return c, nil
}

// Tiers returns the chain's tiers in lookup order.
func (c *Chain) Tiers() []*Remote { return c.tiers }

// lookup runs get on each tier in order until one hits. Without a hit it
// returns the first failure of a tier (which the build warns about), else
// the last miss.
func lookup[T any](c *Chain, get func(*Remote) (T, error)) (T, int, error) {
	var zero T
	var miss, failure error
	for i, r := range c.tiers {
		v, err := get(r)
		if err == nil {
			return v, i, nil
		}
		if errors.Is(err, cache.ErrMiss) {
			miss = err
		} else if failure == nil {
			failure = err
		}
	}
	if failure != nil {
		return zero, -1, failure
	}
	return zero, -1, miss
}

// Entry returns the verified entry of key, without its blobs, from the
// first tier that has it. An entry without outputs (a manifest) found in
// a later tier is published to the earlier ones.
func (c *Chain) Entry(ctx context.Context, key cache.Key) (*cache.Entry, error) {
	e, i, err := lookup(c, func(r *Remote) (*cache.Entry, error) { return r.Entry(ctx, key) })
	if err == nil && len(e.Outputs) == 0 {
		c.copyBack(i, e, nil)
	}
	return e, err
}

// Get returns the verified entry of key as a hit (see Remote.Get) from
// the first tier that has it. A hit in a later tier of at most
// copyBackBytes is read (verified) and published to the earlier ones, and
// the hit returned serves those bytes; a larger one streams from its tier
// and is not copied back (the publication queue holds whole outputs).
func (c *Chain) Get(ctx context.Context, key cache.Key) (*cache.Hit, error) {
	h, i, err := lookup(c, func(r *Remote) (*cache.Hit, error) { return r.Get(ctx, key) })
	if err != nil || i == 0 || h.Entry.Size() > copyBackBytes {
		return h, err
	}
	data, err := h.ReadAll()
	if err != nil {
		return nil, err
	}
	c.copyBack(i, h.Entry, data)
	return cache.NewHit(h.Entry, func(i int) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data[i])), nil
	}), nil
}

// copyBackBytes bounds the outputs of a hit in a later tier that Get
// copies back to the earlier ones.
const copyBackBytes = 64 << 20

// copyBack publishes what tier i served to the tiers before it.
func (c *Chain) copyBack(i int, e *cache.Entry, data [][]byte) {
	for _, r := range c.tiers[:i] {
		r.Publish(e, data)
	}
}

// Publish queues a write of e and data to every writable tier (neither may
// be modified afterwards). It returns whether some tier took it.
func (c *Chain) Publish(e *cache.Entry, data [][]byte) bool {
	took := false
	for _, r := range c.tiers {
		if r.Publish(e, data) {
			took = true
		}
	}
	return took
}

// Drain drains every tier at once (see Remote.Drain) and returns the
// publications abandoned in all.
func (c *Chain) Drain(ctx context.Context) int {
	n := make(chan int, len(c.tiers))
	for _, r := range c.tiers {
		go func() { n <- r.Drain(ctx) }()
	}
	total := 0
	for range c.tiers {
		total += <-n
	}
	return total
}

// Close closes every tier.
func (c *Chain) Close() error {
	var errs []error
	for _, r := range c.tiers {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// Stats returns the counters of each tier, in lookup order.
func (c *Chain) Stats() []Stats {
	out := make([]Stats, len(c.tiers))
	for i, r := range c.tiers {
		out[i] = r.Stats()
	}
	return out
}

// Target names the tiers, passwords elided.
func (c *Chain) Target() string {
	s := ""
	for i, r := range c.tiers {
		if i > 0 {
			s += " "
		}
		s += r.cfg.Target.String()
	}
	return s
}
