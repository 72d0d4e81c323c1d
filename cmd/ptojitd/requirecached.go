package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/internal/value"
)

// requireCachedVariable, when true, makes an uncached build fail (exit 1),
// as --require-cached does: for CI jobs that must cache.
const requireCachedVariable = "PTOJIT_REQUIRE_CACHED"

// rootWarnings returns a warning for each toolchain root the request names
// that does not exist, as FILE:LINE:COL: FIELD: ...: such a build runs
// uncached (the identity is unavailable), and the warning says which line
// to fix.
func rootWarnings(req *api.Request) []string {
	var out []string
	for _, p := range req.Paths() {
		if !strings.HasPrefix(p.Field, "toolchain.") {
			continue
		}
		if _, err := os.Stat(p.Path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		fe := &api.FieldError{Field: p.Field, Msg: fmt.Sprintf("%s does not exist: the toolchain identity is unavailable, so the build runs uncached", p.Path)}
		out = append(out, req.Locate(fe).Error())
	}
	return out
}

// requiresCached reports whether --require-cached (flag) or
// PTOJIT_REQUIRE_CACHED asks that a build be cached; a variable that is no
// boolean is invalid input naming it.
func requiresCached(env *cli.Env, flag bool) (bool, error) {
	if flag {
		return true, nil
	}
	v := env.Getenv(requireCachedVariable)
	if v == "" {
		return false, nil
	}
	on, err := value.Bool(v)
	if err != nil {
		return false, cli.Invalid(fmt.Errorf("%s: %w", requireCachedVariable, err))
	}
	return on, nil
}

// uncachedFailure is the error of a build that ran uncached when a cached
// one was required: exit 1, with the reasons.
func uncachedFailure(resp *api.Response) error {
	return fmt.Errorf("the build ran uncached and a cached build is required (--require-cached or %s): %s",
		requireCachedVariable, strings.Join(resp.Unavailable, "; "))
}
