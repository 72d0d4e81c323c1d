package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// backend is the key-value store under a Remote: Redis (a server or a
// cluster) or an S3 bucket. The Remote lays out, verifies, signs and
// counts; a backend only moves bytes. No value is ever empty (blobs start
// with their form's byte, entries with their magic), so nil means absent.
type backend interface {
	// get returns the value of each key, nil where the key is absent.
	get(ctx context.Context, keys []string) ([][]byte, error)
	// set writes each value under its key (each one write: a reader
	// sees the whole value or none).
	set(ctx context.Context, keys []string, vals [][]byte) error
	// exists reports which keys are present.
	exists(ctx context.Context, keys []string) ([]bool, error)
	// del deletes keys, ignoring failures.
	del(ctx context.Context, keys []string)
	// kind says what a failure of an operation was.
	kind(err error) failureKind
	// authHint tells a user whose credentials were refused where they
	// come from.
	authHint() string
	close() error
}

// failureKind classifies a backend's failure.
type failureKind int

const (
	// failNetwork is a failure of the tier (network, timeout, error
	// reply): it counts toward the breaker.
	failNetwork failureKind = iota
	// failAuth is refused credentials; it counts toward the breaker.
	failAuth
	// failFull is a full server: it answers, and reads still work.
	failFull
	// failPart is a failure of one part of the tier while the rest
	// answers (a stopped Redis Cluster master): it does not count
	// toward the breaker, so that the keys the rest holds are served.
	failPart
)

// answeredWindow is how recently another part of a cluster must have
// answered for a failure to be a part's (failPart).
const answeredWindow = 10 * time.Second

// redisBackend is a backend on a Redis server or cluster: reads and
// writes of many keys are pipelined. In a cluster, a node that fails
// while another answered within answeredWindow is a failure of that
// node's slots alone (failPart): the others are still read and written.
type redisBackend struct {
	client  redis.UniversalClient
	cluster bool
	now     func() time.Time // Config.Now
	// answered is when a command last had a reply (Unix nanoseconds).
	answered atomic.Int64
}

// maxValueBytes bounds one value read: a chunk, a whole blob of at most
// a chunk with its form byte, an entry or a signature, as S3's objects.
const maxValueBytes = maxObjectBytes

// get reads each value with GETRANGE up to maxValueBytes+1 bytes: a value
// longer than the bound reads as one byte more than it, longer than any
// value stored, so the size and digest checks refuse it without the
// whole value ever in memory. An absent key reads as empty (and no
// value stored is empty).
func (b *redisBackend) get(ctx context.Context, keys []string) ([][]byte, error) {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.GetRange(ctx, k, 0, maxValueBytes)
	}
	_, err := pipe.Exec(ctx)
	b.note(cmds)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, c := range cmds {
		v, err := c.Bytes()
		if err != nil {
			return nil, err
		}
		if len(v) > 0 {
			out[i] = v
		}
	}
	return out, nil
}

// note records whether any of cmds had a reply (an error reply is one).
func (b *redisBackend) note(cmds []*redis.StringCmd) {
	for _, c := range cmds {
		var reply redis.Error
		if err := c.Err(); err == nil || errors.As(err, &reply) {
			b.answered.Store(b.now().UnixNano())
			return
		}
	}
}

func (b *redisBackend) set(ctx context.Context, keys []string, vals [][]byte) error {
	if len(keys) == 1 {
		err := b.client.Set(ctx, keys[0], vals[0], 0).Err()
		if err == nil {
			b.answered.Store(b.now().UnixNano())
		}
		return err
	}
	pipe := b.client.Pipeline()
	for i, k := range keys {
		pipe.Set(ctx, k, vals[i], 0)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		return err
	}
	b.answered.Store(b.now().UnixNano())
	for _, c := range cmds {
		if c.Err() != nil {
			return c.Err()
		}
	}
	return nil
}

func (b *redisBackend) exists(ctx context.Context, keys []string) ([]bool, error) {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Exists(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	b.answered.Store(b.now().UnixNano())
	out := make([]bool, len(keys))
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}

// del deletes keys one at a time (they may live in different slots).
func (b *redisBackend) del(ctx context.Context, keys []string) {
	pipe := b.client.Pipeline()
	for _, k := range keys {
		pipe.Del(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
}

func (b *redisBackend) kind(err error) failureKind {
	var reply redis.Error
	if b.cluster && !errors.As(err, &reply) && b.now().Sub(time.Unix(0, b.answered.Load())) < answeredWindow {
		return failPart
	}
	if errors.As(err, &reply) {
		// The server's reply names its kind (the Redis protocol's error
		// code); the client library reads it.
		switch {
		case redis.IsOOMError(reply):
			return failFull
		case redis.IsAuthError(reply):
			return failAuth
		}
	}
	return failNetwork
}

func (b *redisBackend) authHint() string {
	return "check the password the URL gives: redis://:PASSWORD@host:port"
}

func (b *redisBackend) close() error { return b.client.Close() }
