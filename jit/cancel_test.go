package jit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/test/fixture"
)

// errInterrupted stands for a client's interrupt, the cause of the
// build's context.
var errInterrupted = errors.New("interrupted")

// TestCancelBeforePublishPublishesNothing: a build cancelled once its
// compilers finished, before its request entry is written (nobody else
// waits for its flight), publishes no result or pack entry, answers
// status cancelled with the context's cause, and counts no error; the
// next build compiles and publishes.
func TestCancelBeforePublishPublishesNothing(t *testing.T) {
	fixture.Guard(t, 60*time.Second)
	_, req := copyExamples(t)
	store := cache.NewMemory(cache.Options{})
	getenv, environ := env()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	returned := make(chan struct{})
	d := New(Options{Store: store, Identities: identities, Getenv: getenv, Environ: environ, TempDir: t.TempDir(),
		BeforeRevalidate: func() {
			// The client goes away; its build returns once it stopped
			// waiting for the flight, which nobody else waits for.
			cancel(errInterrupted)
			select {
			case <-returned:
			case <-time.After(30 * time.Second):
				t.Error("the cancelled build did not return within 30s")
			}
		}})
	var r *api.Response
	var err error
	go func() {
		r, err = d.Build(ctx, req)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(50 * time.Second):
		t.Fatal("the build did not return within 50s")
	}
	if !errors.Is(err, errInterrupted) || r.Status != api.StatusCancelled {
		t.Fatalf("cancelled build: status %s, err %v; want cancelled with the context's cause", r.Status, err)
	}
	if kinds := storedKinds(t, store); kinds["result"] != 0 || kinds[PackKind] != 0 {
		t.Errorf("entries by kind after the cancel: %v; want no result and no pack entry", kinds)
	}
	st, err := cache.ReadStats(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if st.Errors != 0 {
		t.Errorf("the cancelled build counted %d errors, want 0", st.Errors)
	}
	build(t, newDriver(t, store), req, api.StatusMiss)
}
