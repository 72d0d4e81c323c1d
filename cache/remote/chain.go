package remote

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/ptojit/ptojit/cache"
)

// Chain is the remote tiers of one remote setting, in lookup order (a
// Redis cache in front of a bucket, say). Each tier is a cache.Core: a
// Remote (Redis or S3) or any other store that verifies what it serves
// (a REAPI tier, a local store in tests). A tier may also queue its writes
// (Publish(e, data) bool), wait for them (Drain) and report counters
// (Stats); a tier without Publish is written with Put when a build
// publishes. Lookups go through the tiers in order; a hit in a later tier
// is published to the earlier ones; publications go to every tier.
// Builds use a Chain through the store decorator Over returns. Safe for
// concurrent use.
type Chain struct{ tiers []cache.Core }

// NewChain opens a tier for each of cfgs: a Remote (see New). A new kind
// of tier is a cache.Core and a case here.
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

// ChainOf returns the chain of tiers, in lookup order: stores already
// open, which the chain's Close closes.
func ChainOf(tiers ...cache.Core) *Chain { return &Chain{tiers: tiers} }

// Tiers returns the chain's tiers in lookup order.
func (c *Chain) Tiers() []cache.Core { return c.tiers }

// queuedTier is a tier that queues its writes (Remote.Publish).
type queuedTier interface {
	Publish(e *cache.Entry, data [][]byte) bool
}

// get runs Get on each tier in order until one hits. Without a hit it
// returns the first failure of a tier (which the build warns about), else
// the last miss. A hit in a later tier of at most copyBackBytes is read
// (verified) and published to the earlier ones, and the hit returned
// serves those bytes; a larger one streams from its tier and is not
// copied back (a publication holds whole outputs).
func (c *Chain) get(ctx context.Context, key cache.Key) (*cache.Hit, error) {
	var miss, failure error
	for i, t := range c.tiers {
		h, err := t.Get(ctx, key)
		switch {
		case err == nil && (i == 0 || h.Entry.Size() > copyBackBytes):
			return h, nil
		case err == nil:
			data, err := h.ReadAll()
			if err != nil {
				return nil, err
			}
			c.publish(c.tiers[:i], h.Entry, data)
			copied := cache.NewHit(h.Entry, func(i int) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(data[i])), nil
			})
			copied.Warnings = h.Warnings
			return copied, nil
		case errors.Is(err, cache.ErrMiss):
			miss = err
		case failure == nil:
			failure = err
		}
	}
	if failure != nil {
		return nil, failure
	}
	if miss == nil {
		miss = ErrMiss
	}
	return nil, miss
}

// copyBackBytes bounds the outputs of a hit in a later tier that get
// copies back to the earlier ones.
const copyBackBytes = 64 << 20

// publish queues a write of e and data to tiers: through their Publish,
// or their Put (not a Remote's: a tier that writes at once).
func (c *Chain) publish(tiers []cache.Core, e *cache.Entry, data [][]byte) bool {
	took := false
	for _, t := range tiers {
		if p, ok := t.(queuedTier); ok {
			took = p.Publish(e, data) || took
		} else if t.Put(context.Background(), e, cache.Readers(data...)) == nil {
			took = true
		}
	}
	return took
}

// writable reports whether some tier takes writes (is not a read-only
// Remote or another tier whose ReadOnly says so).
func (c *Chain) writable() bool {
	for _, t := range c.tiers {
		if ro, ok := t.(interface{ ReadOnly() bool }); !ok || !ro.ReadOnly() {
			return true
		}
	}
	return false
}

// Publish queues a write of e and data to every tier (neither may be
// modified afterwards). It returns whether some tier took it.
func (c *Chain) Publish(e *cache.Entry, data [][]byte) bool { return c.publish(c.tiers, e, data) }

// Drain drains every tier that queues its writes at once (see
// Remote.Drain) and returns the publications abandoned in all.
func (c *Chain) Drain(ctx context.Context) int {
	n := make(chan int, len(c.tiers))
	for _, t := range c.tiers {
		go func() {
			if d, ok := t.(interface{ Drain(context.Context) int }); ok {
				n <- d.Drain(ctx)
				return
			}
			n <- 0
		}()
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
	for _, t := range c.tiers {
		errs = append(errs, t.Close())
	}
	return errors.Join(errs...)
}

// Stats returns the counters of each tier that reports them (a Remote),
// in lookup order.
func (c *Chain) Stats() []Stats {
	var out []Stats
	for _, t := range c.tiers {
		if s, ok := t.(interface{ Stats() Stats }); ok {
			out = append(out, s.Stats())
		}
	}
	return out
}

// Target names the tiers that say what they are (a Remote: its URL,
// passwords elided).
func (c *Chain) Target() string {
	s := ""
	for _, t := range c.tiers {
		r, ok := t.(*Remote)
		if !ok {
			continue
		}
		if s != "" {
			s += " "
		}
		s += r.cfg.Target.String()
	}
	return s
}
