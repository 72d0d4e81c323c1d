package jit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// toolCommand returns the command that runs tool with args under ctx. The
// tool runs in a process group of its own, and when ctx ends (the build
// was cancelled or timed out) the whole group is killed: a compiler
// driver's children (cc1, as, ld) die with it instead of running on
// unowned. WaitDelay bounds the wait for the tool's output pipe after it
// exited or was killed.
func toolCommand(ctx context.Context, tool string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = toolWaitDelay
	return cmd
}

// killGroup kills the process group p leads (toolCommand makes every tool
// a group's leader, so its group id is its pid). SIGKILL ends a stopped
// process too.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		// Nothing of the group is left.
		return os.ErrProcessDone
	}
	return err
}

// toolWaitDelay bounds the wait for a tool's output pipe once the tool
// has exited or the build was cancelled.
const toolWaitDelay = 5 * time.Second

// runTool runs cmd (made by toolCommand under ctx) to its end. While it
// runs, the states of its process and their children are looked at every
// toolWatchEvery, and a stopped one (SIGSTOP, a debugger) is reported to
// ctx's ProgressFunc, with the deadline that will end it. When ctx ended
// (the compile deadline, a cancelled build) the error is ctx's cause, not
// the signal that killed the tool.
func runTool(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := make(chan struct{})
	watched := make(chan struct{})
	if report := progressOf(ctx); report != nil {
		go func() {
			defer close(watched)
			watchTool(ctx, cmd.Process.Pid, filepath.Base(cmd.Path), report, stop)
		}()
	} else {
		close(watched)
	}
	err := cmd.Wait()
	close(stop)
	<-watched
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// toolWatchEvery is how often runTool looks at the states of a tool's
// processes.
var toolWatchEvery = time.Second

// watchTool reports, until stop is closed, when a process of the tool
// whose group leader is pid is stopped and when it runs again.
func watchTool(ctx context.Context, pid int, name string, report ProgressFunc, stop <-chan struct{}) {
	t := time.NewTicker(toolWatchEvery)
	defer t.Stop()
	var since time.Time // when a stopped process was first seen
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p, ok := stoppedProcess(pid)
		switch {
		case ok:
			if since.IsZero() {
				since = time.Now()
			}
			report(stoppedText(ctx, name, p, since))
		case !since.IsZero():
			since = time.Time{}
			report(fmt.Sprintf("compiling: %s (pid %d) runs again", name, pid))
		}
	}
}

// stoppedText says which process of a tool is stopped, since when, and
// when the compile deadline ends it.
func stoppedText(ctx context.Context, name string, p procState, since time.Time) string {
	msg := fmt.Sprintf("compiling: %s (pid %d) is stopped (state %c) for %s", p.comm, p.pid, p.state,
		time.Since(since).Round(time.Second))
	if p.comm != name {
		msg += ", under " + name
	}
	if dl, ok := ctx.Deadline(); ok {
		msg += fmt.Sprintf("; the compile deadline ends it at %s (in %s)", dl.Format(time.TimeOnly), time.Until(dl).Round(time.Second))
	}
	return msg
}

// procState is what /proc/PID/stat says of a process.
type procState struct {
	pid   int
	comm  string
	state byte // R, S, D, T (stopped), t (stopped by a tracer), Z...
}

// maxToolProcs bounds the processes of one tool that stoppedProcess
// looks at.
const maxToolProcs = 64

// stoppedProcess returns the first process found stopped (state T or t)
// among pid and its descendants (/proc/PID/task/TID/children), looking
// at no more than maxToolProcs of them. Without /proc it finds none.
func stoppedProcess(pid int) (procState, bool) {
	queue := []int{pid}
	for seen := 0; len(queue) > 0 && seen < maxToolProcs; seen++ {
		p := queue[0]
		queue = queue[1:]
		st, err := readProcState(p)
		if err != nil {
			continue // gone meanwhile
		}
		if st.state == 'T' || st.state == 't' {
			return st, true
		}
		queue = append(queue, childrenOf(p)...)
	}
	return procState{}, false
}

// readProcState reads /proc/PID/stat: "pid (comm) state ...", where comm
// may itself hold parentheses and spaces (the last ')' ends it).
func readProcState(pid int) (procState, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procState{}, err
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return procState{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return procState{pid: pid, comm: string(b[open+1 : end]), state: b[end+2]}, nil
}

// childrenOf returns the children of every thread of pid.
func childrenOf(pid int) []int {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// ProgressFunc is told, during a build, what its compiles are doing when
// that is worth a word (a compiler that is stopped). Safe for concurrent
// calls, as the compiles of a build run at once.
type ProgressFunc func(doing string)

type progressKey struct{}

// WithProgress returns ctx carrying f: the builds under ctx report to it.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// progressOf returns the ProgressFunc of ctx, or nil.
func progressOf(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}
