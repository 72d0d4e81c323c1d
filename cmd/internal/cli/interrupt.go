package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// InterruptError is the cause of a command's context ended by SIGINT or
// SIGTERM: the command was cancelled. Its exit code is 128 plus the
// signal's number (130, 143), as a shell reports a process the signal
// killed. Immutable.
type InterruptError struct {
	Signal syscall.Signal
}

func (e *InterruptError) Error() string { return "cancelled by " + signalName(e.Signal) }

// Code is the exit code of a command the signal cancelled.
func (e *InterruptError) Code() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// InterruptGrace is how long a cancelled command has to return after
// SIGINT or SIGTERM before the process exits by itself with the signal's
// code. A command that waits on something that does not watch its
// context (a daemon's reply, a start lock) thus still ends within it: the
// daemon sees its client hang up, and cancels the request as it does for
// any client that went away.
var InterruptGrace = 500 * time.Millisecond

// InterruptAfter is how long a process runs before Interruptible takes
// SIGINT and SIGTERM over. Taking them costs every process about a fifth
// of a millisecond (the runtime starts a thread for signal delivery), a
// tenth of a cached build's whole run, so a command that ends sooner (a
// hit) never pays it. A signal before then has its default action: the
// process ends at once (a shell reports 130 or 143 as for a handled one),
// and a daemon it was talking to sees it hang up and cancels its request,
// as it does for any client that went away.
var InterruptAfter = 20 * time.Millisecond

// Interruptible returns ctx, ended with an *InterruptError as its cause
// when the process receives SIGINT or SIGTERM, and the function that
// stops watching and returns the process's exit code for a command that
// returned code: the signal's code once a signal arrived. It watches the
// signals from InterruptAfter on. They are handled even when the process
// started with them ignored (a job a non-interactive shell ran in the
// background starts with SIGINT ignored): a user's or a script's signal
// always cancels the command. After the first signal, the command has
// InterruptGrace to return before the process prints that it was
// cancelled to env's standard error and exits with the code itself.
func Interruptible(ctx context.Context, env *Env) (context.Context, func(code int) int) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	var mu sync.Mutex // guards got, watching and exited
	var got *InterruptError
	watching, exited := false, false
	done := make(chan struct{})
	watch := func() {
		select {
		case s := <-sigs:
			ie := &InterruptError{Signal: s.(syscall.Signal)}
			mu.Lock()
			got = ie
			mu.Unlock()
			cancel(ie)
			select {
			case <-time.After(InterruptGrace):
				fmt.Fprintf(env.Stderr, "%s: %v\n", env.Prog, ie)
				os.Exit(ie.Code())
			case <-done:
			}
		case <-done:
		}
	}
	start := func() {
		mu.Lock()
		defer mu.Unlock()
		if exited || watching {
			return
		}
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		watching = true
		go watch()
	}
	var timer *time.Timer
	if InterruptAfter <= 0 {
		start()
	} else {
		timer = time.AfterFunc(InterruptAfter, start)
	}
	var once sync.Once
	return ctx, func(code int) int {
		once.Do(func() {
			if timer != nil {
				timer.Stop()
			}
			mu.Lock()
			exited = true
			if watching {
				close(done)
				signal.Stop(sigs)
			}
			mu.Unlock()
		})
		mu.Lock()
		defer mu.Unlock()
		if got != nil {
			return got.Code()
		}
		return code
	}
}
