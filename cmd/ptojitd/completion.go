package main

import (
	"slices"

	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/ops"
)

// attachValues gives the commands that take a setting key, a module id or
// an operation name the completion of those values (cli.Command.Values).
func attachValues(all []*cli.Command) {
	first := func(values func(env *cli.Env) []string) func(*cli.Env, string, []string) []string {
		return func(env *cli.Env, flag string, args []string) []string {
			if flag == "" && len(args) == 0 {
				return values(env)
			}
			return nil
		}
	}
	opFlag := func(env *cli.Env, flag string, args []string) []string {
		if flag == "op" {
			return opNames(env)
		}
		return nil
	}
	for _, c := range all {
		for _, s := range c.Subcommands {
			switch c.Name + " " + s.Name {
			case "config get", "config set", "config unset":
				s.Values = first(settingKeys)
			case "module show", "module enable", "module disable", "module remove", "module rollback":
				s.Values = first(moduleIDs)
			case "op resolve", "op run":
				s.Values = opFlag
			}
		}
	}
}

// settingKeys returns the names of the settings.
func settingKeys(*cli.Env) []string {
	var out []string
	for _, k := range config.Known {
		out = append(out, k.Name)
	}
	return out
}

// lookStore opens the default module store of env for looking; nil when
// there is none.
func lookStore(env *cli.Env) *module.Store {
	dir, err := module.StoreDir("", env.Getenv, env.Abs)
	if err != nil {
		return nil
	}
	s, err := module.OpenExisting(dir, module.Options{})
	if err != nil {
		return nil
	}
	return s
}

// moduleIDs returns the ids of the installed modules, sorted.
func moduleIDs(env *cli.Env) []string {
	s := lookStore(env)
	if s == nil {
		return nil
	}
	ms, err := s.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m.PackageID) {
			out = append(out, m.PackageID)
		}
	}
	slices.Sort(out)
	return out
}

// opNames returns the names of the operations the enabled modules
// provide, sorted.
func opNames(env *cli.Env) []string {
	s := lookStore(env)
	if s == nil {
		return nil
	}
	mods, err := s.LoadOrder()
	if err != nil {
		return nil
	}
	cands, _ := ops.CandidatesOf(mods)
	var out []string
	for _, c := range cands {
		if !slices.Contains(out, c.Desc.OpName) {
			out = append(out, c.Desc.OpName)
		}
	}
	slices.Sort(out)
	return out
}
