package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// asEngine makes the test binary run as ptojitd when the envaudit scripts
// execute it, so that they exercise the real command line, exit codes and
// working directory.
const asEngine = "PTOJITD_ENVAUDIT_TEST_AS_ENGINE"

func init() {
	if os.Getenv(asEngine) == "1" {
		os.Exit(program().Main(context.Background(), cli.OSEnv("ptojit"), os.Args[1:]))
	}
}

// TestEnvauditScripts runs the scripts in envaudit/testdata/script. The
// command "envaudit ARGS..." runs "ptojitd envaudit ARGS..." in the
// script's directory and records its exit status, which "status N" checks.
func TestEnvauditScripts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "../../envaudit/testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"envaudit": func(ts *testscript.TestScript, neg bool, args []string) {
				cmd := exec.Command(exe, append([]string{"envaudit"}, args...)...)
				cmd.Dir = ts.MkAbs(".")
				cmd.Env = append(os.Environ(), asEngine+"=1")
				cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
				err := cmd.Run()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("ptojitd envaudit: %v", err)
				}
				ts.Setenv("STATUS", strconv.Itoa(code))
				if (code != 0) != neg {
					ts.Fatalf("ptojitd envaudit exited with status %d", code)
				}
			},
			"status": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: status N")
				}
				if got := ts.Getenv("STATUS"); (got == args[0]) == neg {
					ts.Fatalf("exit status %s, want %s", got, args[0])
				}
			},
		},
	})
}
