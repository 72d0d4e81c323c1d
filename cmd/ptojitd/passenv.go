package main

import (
	"slices"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/internal/config"
)

// passEnvNames parses a pass_env value (api.PassEnvNames).
func passEnvNames(v string) ([]string, error) { return api.PassEnvNames(v) }

// filePassEnv returns the names the pass_env of dir's settings file lists
// (none when the file cannot be read: the request reports that itself).
func filePassEnv(dir string) []string {
	f, err := loadConfig(dir)
	if err != nil {
		return nil
	}
	for _, s := range config.Resolve(f, func(string) string { return "" }) {
		if s.Key.Name == "pass_env" {
			names, _ := passEnvNames(s.Value)
			return names
		}
	}
	return nil
}

// helloEnvNames are the variables the daemon of dir asks clients to send:
// its registry's, and those the settings file's pass_env lists.
func helloEnvNames(dir string) []string {
	return append(slices.Clip(clientEnvNames()), filePassEnv(dir)...)
}

// requestEnvNames are the variables the daemon of dir keeps of a request's
// environment: the registry's, and those pass_env lists (the request's
// PTOJIT_PASS_ENV, else the settings file's). Passed variables reach the
// tools only: the key reads registry variables alone, so one that the
// registry does not classify semantic never enters it.
func requestEnvNames(dir string, env []string) []string {
	names := slices.Clip(clientEnvNames())
	for _, kv := range env {
		// A value set (not empty) overrides the file, as for every
		// setting.
		if v, ok := strings.CutPrefix(kv, api.PassEnvVariable+"="); ok && v != "" {
			return append(names, api.PassEnvFrom(env)...)
		}
	}
	return append(names, filePassEnv(dir)...)
}
