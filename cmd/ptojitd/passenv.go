package main

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/jit"
)

// passEnvNames parses a pass_env value (client.PassEnvNames).
func passEnvNames(v string) ([]string, error) { return client.PassEnvNames(v) }

// filePassEnv returns the names the pass_env of dir's settings file lists
// (none when the file cannot be read: the request reports that itself).
func filePassEnv(m *cli.Memo, dir string) []string {
	f, err := loadConfigIn(m, dir)
	if err != nil {
		return nil
	}
	s, _ := config.ResolveKey(f, nil, "pass_env")
	names, _ := passEnvNames(s.Value)
	return names
}

// fileNoAnswer is the no-answer bound the settings file of dir sets
// (daemon_timeout), client.DefaultNoAnswer when it sets none or no positive
// duration: the hello file publishes it for clients.
func fileNoAnswer(dir string) time.Duration {
	f, err := loadConfig(dir)
	if err != nil {
		return client.DefaultNoAnswer
	}
	s, _ := config.ResolveKey(f, nil, "daemon_timeout")
	if d, err := time.ParseDuration(s.Value); err == nil && d > 0 {
		return d
	}
	return client.DefaultNoAnswer
}

// helloEnvNames are the variables the daemon of dir asks clients to send:
// its registry's, and those the settings file's pass_env lists.
func helloEnvNames(dir string) []string {
	return append(slices.Clip(clientEnvNames()), filePassEnv(nil, dir)...)
}

// requestEnvNames are the variables the daemon of dir keeps of a request's
// environment: the registry's, and those pass_env lists (the request's
// PTOJIT_PASS_ENV, else the settings file's). Passed variables reach the
// tools only: the key reads registry variables alone, so one that the
// registry does not classify semantic never enters it.
func requestEnvNames(m *cli.Memo, dir string, env []string) []string {
	names := slices.Clip(clientEnvNames())
	for _, kv := range env {
		// A value set (not empty) overrides the file, as for every
		// setting.
		if v, ok := strings.CutPrefix(kv, client.PassEnvVariable+"="); ok && v != "" {
			return append(names, client.PassEnvFrom(env)...)
		}
	}
	return append(names, filePassEnv(m, dir)...)
}

// toolEnv is the environment the tools of a command run with: in the daemon
// the request's, which serveCommand has filtered already; in a command that
// builds in its own process (no daemon), the same variables a daemon of
// cacheDir ("" for the default) would keep of it, never the whole
// environment, so that a build behaves the same with and without a daemon.
func toolEnv(env *cli.Env, cacheDir string) []string {
	if engine.dir != "" {
		return env.Environ
	}
	dir, _ := cacheDirOf(env, cacheDir) // none: no settings file
	environ := env.Environ
	if environ == nil {
		environ = os.Environ()
	}
	return withoutSecrets(client.FilterEnv(environ, requestEnvNames(env.Memo, dir, environ)))
}

// withoutSecrets returns environ less the variables the registry marks
// secret (the S3 tier's credentials): no tool ever sees them.
func withoutSecrets(environ []string) []string {
	reg := jit.DefaultRegistry()
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return reg.Secret(k)
	})
}
