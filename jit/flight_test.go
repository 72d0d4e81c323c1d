package jit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The compile of a key runs while any build waits for it: a build that
// stops waiting (its client went away) leaves it to the others; once none
// waits, its context is canceled and the next build starts a new one.
func TestFlightGroup(t *testing.T) {
	var g flightGroup[*flightResult]
	deadline := time.After(20 * time.Second)
	started := make(chan context.Context, 4)
	release := make(chan struct{})
	fn := func(ctx context.Context) (*flightResult, error) {
		started <- ctx
		select {
		case <-release:
			return &flightResult{compileMS: 1}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	type answer struct {
		r      *flightResult
		err    error
		shared bool
	}
	call := func(ctx context.Context) chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, done, err, shared := g.do(ctx, "k", fn)
			done()
			ch <- answer{r, err, shared}
		}()
		return ch
	}
	gone := errors.New("client gone")
	aCtx, aCancel := context.WithCancelCause(context.Background())
	a := call(aCtx)
	fctx := <-started
	// b joins the flight a started.
	waitJoined := func(n int) {
		for {
			g.mu.Lock()
			f := g.m["k"]
			joined := f != nil && f.waiters == n
			g.mu.Unlock()
			if joined {
				return
			}
			select {
			case <-deadline:
				t.Fatalf("%d builds never waited for the flight", n)
			default:
				time.Sleep(time.Millisecond)
			}
		}
	}
	b := call(context.Background())
	waitJoined(2)
	aCancel(gone)
	if got := <-a; !errors.Is(got.err, gone) {
		t.Fatalf("a canceled build returned %v, want its cause", got.err)
	}
	if fctx.Err() != nil {
		t.Fatal("the compile was canceled while a build still waits for it")
	}
	close(release)
	if got := <-b; got.err != nil || got.r == nil || !got.shared {
		t.Fatalf("the waiting build got %+v, want the shared result", got)
	}

	// Nobody waits any more: the compile's context ends, and a new build
	// starts a flight of its own.
	release = make(chan struct{})
	cCtx, cCancel := context.WithCancel(context.Background())
	c := call(cCtx)
	fctx = <-started
	cCancel()
	<-c
	select {
	case <-fctx.Done():
	case <-deadline:
		t.Fatal("the compile nobody waits for was not canceled")
	}
	d := call(context.Background())
	<-started
	close(release)
	if got := <-d; got.err != nil || got.shared {
		t.Fatalf("a build after the abandoned flight: %+v, want a flight of its own", got)
	}

	// A panic in the compile is an error for every build, not a crash.
	r, _, err, _ := g.do(context.Background(), "p", func(context.Context) (*flightResult, error) { panic("boom") })
	if r != nil || err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("a panicking flight: %v %v", r, err)
	}
}

// TestFlightReleasesAfterLastHolder checks that a flight's result is
// released once, after the last build that received it is done with it,
// and at once when no build received it.
func TestFlightReleasesAfterLastHolder(t *testing.T) {
	released := make(chan *flightResult, 2)
	g := flightGroup[*flightResult]{release: func(r *flightResult) { released <- r }}
	started, finish := make(chan struct{}), make(chan struct{})
	fn := func(context.Context) (*flightResult, error) {
		close(started)
		<-finish
		return &flightResult{}, nil
	}
	type got struct {
		r    *flightResult
		done func()
	}
	results := make(chan got, 2)
	go func() { r, done, _, _ := g.do(context.Background(), "k", fn); results <- got{r, done} }()
	<-started
	go func() { r, done, _, _ := g.do(context.Background(), "k", fn); results <- got{r, done} }()
	deadline := time.After(10 * time.Second)
	for {
		g.mu.Lock()
		n := g.m["k"].waiters
		g.mu.Unlock()
		if n == 2 {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the second build never joined the flight")
		default:
			time.Sleep(time.Millisecond)
		}
	}
	close(finish)
	a, b := <-results, <-results
	if a.r == nil || a.r != b.r {
		t.Fatal("the builds did not share the flight's result")
	}
	a.done()
	select {
	case <-released:
		t.Fatal("the result was released while a build still held it")
	default:
	}
	b.done()
	select {
	case r := <-released:
		if r != a.r {
			t.Fatal("another result was released")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the result was not released after its last holder")
	}

	// A flight whose only build left: its result is released at once.
	ctx, cancel := context.WithCancel(context.Background())
	finish = make(chan struct{})
	started = make(chan struct{})
	left := make(chan struct{})
	go func() {
		_, done, err, _ := g.do(ctx, "l", fn)
		done()
		if err == nil {
			t.Error("a build whose context ended got no error")
		}
		close(left)
	}()
	<-started
	cancel()
	<-left
	close(finish)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the result of a flight nobody waited for was not released")
	}
}
