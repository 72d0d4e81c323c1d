package remote

import (
	"context"
	"errors"

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
)

// redisBackend is a backend on a Redis server or cluster: reads and
// writes of many keys are pipelined.
type redisBackend struct{ client redis.UniversalClient }

func (b *redisBackend) get(ctx context.Context, keys []string) ([][]byte, error) {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, c := range cmds {
		v, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = []byte{}
		}
		out[i] = v
	}
	return out, nil
}

func (b *redisBackend) set(ctx context.Context, keys []string, vals [][]byte) error {
	if len(keys) == 1 {
		return b.client.Set(ctx, keys[0], vals[0], 0).Err()
	}
	pipe := b.client.Pipeline()
	for i, k := range keys {
		pipe.Set(ctx, k, vals[i], 0)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		return err
	}
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
