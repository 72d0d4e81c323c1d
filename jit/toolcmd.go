package jit

import (
	"context"
	"errors"
	"os"
	"os/exec"
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
// a group's leader, so its group id is its pid).
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
