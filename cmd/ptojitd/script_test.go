package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/test/fixture"
)

// TestMain lets scripts run the engine as "ptojit" (and "ptojitd") in a
// subprocess of the test binary.
func TestMain(m *testing.M) {
	main := func() {
		os.Exit(engineMain(context.Background(), cli.OSEnv("ptojit"), os.Args[1:], noEngine))
	}
	testscript.Main(m, map[string]func(){"ptojit": main, "ptojitd": main, forgeCommand: forgeEntry, gatedCommand: gatedMain})
}

// TestBuildScripts runs the build and key scripts: jit/testdata/script.
// A script line under the condition [full] runs in the full suites only
// (PTOJIT_TEST_FULL=1).
func TestBuildScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:   filepath.Join("..", "..", "jit", "testdata", "script"),
		Setup: setupExamples,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"corrupt-blob": cmdCorruptBlob,
			"append":       cmdAppend,
			"setenv-json":  cmdSetenvJSON,
			"plant-output": cmdPlantOutput,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "full":
				// The long parts of a script run in the full suites only.
				return fixture.Full(t), nil
			case "cachecmd":
				// The cache command is another part of the engine.
				for _, c := range commands {
					if c.Name == "cache" {
						return true, nil
					}
				}
				return false, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// setupExamples copies testdata/examples into the script's work directory
// and points the cache there.
func setupExamples(env *testscript.Env) error {
	if err := fixture.CopyExamples(env.WorkDir); err != nil {
		return err
	}
	env.Setenv("PTOJIT_CACHE_DIR", filepath.Join(env.WorkDir, "cache"))
	env.Setenv("PTOJIT_DAEMON", "0")
	// The scripts' keys are base-relative, which only the content policy's
	// are (build-policy records hold absolute paths, as PyPTO's do).
	env.Setenv("PYPTO_CACHE_IDENTITY", "content")
	return nil
}

// corrupt-blob FILE: flips one bit of the stored blob whose digest is the
// SHA-256 of FILE, through the cache's fault injector.
func cmdCorruptBlob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: corrupt-blob FILE")
	}
	d := sha256.Sum256([]byte(ts.ReadFile(args[0])))
	store, err := cache.Open(ts.Getenv("PTOJIT_CACHE_DIR"), cache.Options{})
	ts.Check(err)
	defer store.Close()
	ts.Check(store.CorruptBlob(context.Background(), d))
}

// append FILE TEXT: appends a line to FILE.
func cmdAppend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: append FILE TEXT")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	_, err = fmt.Fprintln(f, args[1])
	ts.Check(err)
	ts.Check(f.Close())
	ts.Check(fixture.Settle(ts.MkAbs(args[0])))
}

// setenv-json VAR FILE FIELD: sets VAR to the string FIELD of the JSON
// object in FILE.
func cmdSetenvJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: setenv-json VAR FILE FIELD")
	}
	var m map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &m))
	s, ok := m[args[2]].(string)
	if !ok {
		ts.Fatalf("%s has no string field %q", args[1], args[2])
	}
	ts.Setenv(args[0], s)
}

// noEngine stands for the engine executable in scripts: a script that
// would start a daemon fails at once instead.
func noEngine() (string, error) {
	return "", errors.New("this test starts no daemon")
}

// plant-output KEY NAME FILE: plants other bytes for output NAME of KEY's
// result (plantOutput) and writes them to FILE.
func cmdPlantOutput(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: plant-output KEY NAME FILE")
	}
	b, err := plantOutput(ts.Getenv("PTOJIT_CACHE_DIR"), args[0], args[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
}

// plantOutput replaces output name of the result entry that the newest
// header variant of key's manifest names, in the cache directory dir, with
// other bytes (its bytes and "planted"): a well-formed entry under the same
// key, put through the cache package, whose outputs are not what the key's
// inputs compile to. It returns the new bytes.
func plantOutput(dir, key, name string) ([]byte, error) {
	ctx := context.Background()
	store, err := cache.Open(dir, cache.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	k, err := cache.ParseKey(key)
	if err != nil {
		return nil, err
	}
	m, err := store.Entry(ctx, k)
	if err != nil {
		return nil, err
	}
	var man struct {
		Variants []struct {
			Result string `json:"result"`
		} `json:"variants"`
	}
	mj, _, err := jit.ManifestJSON(ctx, store, m)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mj, &man); err != nil || len(man.Variants) == 0 {
		return nil, fmt.Errorf("the manifest of %s names no variant (%v)", key, err)
	}
	rk, err := cache.ParseKey(man.Variants[0].Result)
	if err != nil {
		return nil, err
	}
	h, err := store.Get(ctx, rk)
	if err != nil {
		return nil, err
	}
	e := *h.Entry
	e.Outputs = append([]cache.Output(nil), e.Outputs...)
	data, err := h.ReadAll()
	if err != nil {
		return nil, err
	}
	for i, o := range e.Outputs {
		if o.Name == name {
			data[i] = append(append([]byte(nil), data[i]...), "planted"...)
			e.Outputs[i].Size, e.Outputs[i].Digest = 0, cache.Digest{}
			if err := store.Put(ctx, &e, cache.Readers(data...)); err != nil {
				return nil, err
			}
			return data[i], store.Close()
		}
	}
	return nil, fmt.Errorf("the result of %s has no output %s", key, name)
}
