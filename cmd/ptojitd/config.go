package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/cache/limit"
	"github.com/ptojit/ptojit/cache/remote"
	"github.com/ptojit/ptojit/cache/remote/tiers"
	"github.com/ptojit/ptojit/cmd/internal/cli"
	"github.com/ptojit/ptojit/daemon"
	"github.com/ptojit/ptojit/internal/config"
	"github.com/ptojit/ptojit/internal/value"
	"github.com/ptojit/ptojit/jit"
	"github.com/ptojit/ptojit/observe"
)

func init() {
	keys := func() string {
		var b strings.Builder
		for _, k := range config.Known {
			def := k.Default
			if def == "" {
				def = "none"
			}
			fmt.Fprintf(&b, "  %-16s %s (%s; default %s)\n", k.Name, k.Doc, k.Env, def)
		}
		return b.String()
	}()
	sub := func(name, usage, summary string, nargs int, run func(env *cli.Env, o *configOptions, args []string) error) *cli.Command {
		return &cli.Command{
			Name: name, Usage: "config " + usage, Summary: summary,
			Setup: func(fs *pflag.FlagSet) cli.RunFunc {
				o := &configOptions{}
				fs.StringVar(&o.cacheDir, "cache-dir", "", "the cache directory (default: PTOJIT_CACHE_DIR or the user cache directory)")
				if name == "list" {
					fs.BoolVar(&o.json, "json", false, "print JSON")
				}
				return func(ctx context.Context, env *cli.Env, args []string) error {
					if len(args) != nargs {
						return cli.Usagef("usage: ptojit config %s", usage)
					}
					return run(env, o, args)
				}
			},
		}
	}
	register(&cli.Command{
		Name:    "config",
		Usage:   "config get KEY | set KEY VALUE | unset KEY | list [--json]",
		Summary: "read and change the settings kept in the cache directory",
		Long: `Settings live in ` + config.FileName + ` in the cache directory, one "key = value"
per line; blank lines and lines starting with # are ignored, and an unknown
key or a bad value is refused with the file and line. The value in force is
the environment variable of the key when set, else the file's, else the
default; the daemon resolves it for every request with that client's
environment, so an environment override applies to that request only.
"ptojit daemon status" shows the settings in force.

Keys:
` + keys + `
A cap smaller than the cache trims it after the next stored build (to 90%
of the cap, so trims are rare), and the idle daemon trims to the file's cap.

get and list only look: on a cache directory that does not exist they print
the values in force (the environment's, else the defaults; there is no file
to read) and create nothing; "set" and "unset" create the directory.

Exit status: 0 done, 1 a failure (an unreadable or invalid settings file),
2 usage error or invalid input (an unknown key, a bad value).`,
		Subcommands: []*cli.Command{
			sub("get", "get KEY", "print the value in force of KEY", 1, runConfigGet),
			sub("set", "set KEY VALUE", "set KEY in the file", 2, runConfigSet),
			sub("unset", "unset KEY", "remove KEY from the file (its default applies)", 1, runConfigSet),
			sub("list", "list [--json]", "print every setting in force and where it comes from", 0, runConfigList),
		},
	})
}

type configOptions struct {
	cacheDir string
	json     bool
}

// checkSetting validates the values internal/config cannot parse itself.
func checkSetting(k config.Key, v string) error {
	if k.Kind == config.Size {
		_, err := cache.ParseSize(v)
		return err
	}
	switch k.Name {
	case "remote":
		if v == "" {
			return nil
		}
		_, err := remote.ParseURLs(v)
		var ue *remote.URLError
		if errors.As(err, &ue) {
			// The caller names where the value came from: the
			// command line, the file's line or the variable.
			return errors.New(ue.Msg)
		}
		return err
	case "remote_signing_key":
		_, err := tiers.ReadSigningKey(v)
		return err
	case "remote_trust":
		_, err := tiers.ParseTrust(v)
		return err
	case "remote_timeout", "remote_connect_timeout":
		_, err := value.Duration(v, remote.MinTimeout, remote.MaxTimeout)
		return err
	case "daemon_timeout":
		_, err := value.Duration(v, minDaemonTimeout, maxDaemonTimeout)
		return err
	case "compile_timeout":
		_, err := value.Duration(v, minCompileTimeout, maxCompileTimeout)
		return err
	case "policy":
		if v != "" {
			_, err := value.Enum(v, "build", "content")
			return err
		}
	case "base_dir":
		if v != "" && !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
	case "pass_env":
		_, err := passEnvNames(v)
		return err
	case "log_level", "metrics_listen", "metrics_textfile":
		return observe.CheckSetting(k.Name, v)
	}
	return nil
}

// configPath returns the settings file of the cache directory of env (or
// the --cache-dir flag).
func configPath(env *cli.Env, flag string) (string, error) {
	dir, err := cacheDirOf(env, flag)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, config.FileName), nil
}

// loadConfig reads the settings file of cacheDir; a file that is invalid is
// a usage error naming its line.
//
// A settings file of a cache directory that is not the user's own
// (cache.CheckFile) is not read: it reads as absent, so that it chooses no
// remote tier and no setting, and the store's open refuses the directory
// with the message that names it (the build runs uncached).
//
// The file returned is shared with later calls (configMemo): callers only
// read it; one that changes the file reads it with readConfig.
func loadConfig(cacheDir string) (*config.File, error) {
	path := filepath.Join(cacheDir, config.FileName)
	fi, err := cache.CheckFileStat(cacheDir, config.FileName)
	if err != nil || fi == nil {
		// Refused (it names the directory when the store opens), or
		// absent: no settings.
		return &config.File{Path: path}, nil
	}
	stamp := api.StatStamp(fi)
	configMemo.mu.Lock()
	e, ok := configMemo.m[path]
	configMemo.mu.Unlock()
	if ok && e.stamp == stamp {
		return e.f, nil
	}
	read := time.Now()
	f, err := readConfig(cacheDir)
	if err == nil && fi.ModTime().Before(read.Add(-configStableAge)) && api.FileStamp(path) == stamp {
		configMemo.mu.Lock()
		if configMemo.m == nil || len(configMemo.m) >= maxConfigMemo {
			configMemo.m = map[string]configMemoEntry{}
		}
		configMemo.m[path] = configMemoEntry{stamp: stamp, f: f}
		configMemo.mu.Unlock()
	}
	return f, err
}

// commandConfig is a settings file as one command read it (loadConfigIn).
type commandConfig struct {
	f   *config.File
	err error
}

// configOf keys a command's reading of a cache directory's settings file in
// its cli.Memo.
type configOf string

// loadConfigIn is loadConfig read once per command, m being the command's
// memo (its cli.Env's): every part of the command (a build's policy, base
// directory, store, remote tier and request log, and in a daemon the
// request's pass_env) sees the one reading, and the file is stat'ed once.
// A nil m reads it each time.
func loadConfigIn(m *cli.Memo, cacheDir string) (*config.File, error) {
	c := m.Load(configOf(cacheDir), func() any {
		f, err := loadConfig(cacheDir)
		return commandConfig{f, err}
	}).(commandConfig)
	return c.f, c.err
}

// readConfig is loadConfig without the memo: the file as it is now, for
// a caller that changes it.
func readConfig(cacheDir string) (*config.File, error) {
	path := filepath.Join(cacheDir, config.FileName)
	if cache.CheckFile(cacheDir, config.FileName) != nil {
		return &config.File{Path: path}, nil
	}
	f, err := config.Load(path, checkSetting)
	var le *config.LineError
	if errors.As(err, &le) {
		return nil, cli.Usagef("%v", err)
	}
	return f, err
}

// configMemo keeps the settings files the daemon has read, by path, with
// the stamp (api.StatStamp: size, modification time, device, inode and
// change time) they had: a request whose file has the same stamp uses the
// parsed file again. A file is kept only when it was last modified at
// least configStableAge before it was read and its stamp was the same
// after the read, so that a write in the same tick of a coarse file
// system clock cannot leave the stamp unchanged (git's racily-clean rule).
var configMemo struct {
	mu sync.Mutex // guards m
	m  map[string]configMemoEntry
}

type configMemoEntry struct {
	stamp string
	f     *config.File
}

const (
	configStableAge = time.Second
	maxConfigMemo   = 64
)

// settings are the cache settings in force for one command or request.
type settings struct {
	list     []config.Setting
	maxBytes int64
	readOnly bool
	verify   bool // the verify mode (jit.Options.Verify)
	// jobs is the size of the compile pool (0: the number of CPUs).
	jobs int
	// compileTimeout is compile_timeout: how long one unit's compile may
	// run (jit.WithCompileTimeout).
	compileTimeout time.Duration
	// logMaxBytes is log_max_size (the request log), logLevel log_level.
	logMaxBytes int64
	logLevel    string
	// metricsListen and metricsTextfile are metrics_listen and
	// metrics_textfile ("" when off).
	metricsListen, metricsTextfile string
}

// resolveSettings returns the settings in force: getenv's variables, else
// the settings file of cacheDir, else the defaults. A bad environment value
// is a usage error naming the variable.
func resolveSettings(m *cli.Memo, cacheDir string, getenv func(string) string) (*settings, error) {
	f, err := loadConfigIn(m, cacheDir)
	if err != nil {
		return nil, err
	}
	s := &settings{list: config.Resolve(f, getenv)}
	for i, st := range s.list {
		if st.Key.Name == "max_size" && st.Source != config.FromEnv && daemonMaxSize != "" {
			st.Value, st.Source, st.Line = daemonMaxSize, sourceDaemonFlag, 0
			s.list[i] = st
		}
		bad := func(err error) error {
			if st.Source == config.FromEnv {
				return cli.Usagef("%s: %v", st.Key.Env, err)
			}
			return cli.Usagef("%s: %s: %v", f.Path, st.Key.Name, err)
		}
		switch st.Key.Name {
		case "max_size":
			if s.maxBytes, err = cache.ParseSize(st.Value); err != nil {
				return nil, bad(err)
			}
		case "readonly":
			if s.readOnly, err = config.ParseBool(st.Value); err != nil {
				return nil, bad(err)
			}
		case "verify":
			if s.verify, err = config.ParseBool(st.Value); err != nil {
				return nil, bad(err)
			}
		case "jobs":
			if s.jobs, err = strconv.Atoi(st.Value); err != nil || s.jobs < 0 {
				return nil, bad(errors.New("not a number of compiles (0 or more)"))
			}
		case "compile_timeout":
			if s.compileTimeout, err = value.Duration(st.Value, minCompileTimeout, maxCompileTimeout); err != nil {
				return nil, bad(err)
			}
		case "log_max_size":
			if s.logMaxBytes, err = cache.ParseSize(st.Value); err != nil {
				return nil, bad(err)
			}
		case "log_level":
			if err := observe.CheckSetting(st.Key.Name, st.Value); err != nil {
				return nil, bad(err)
			}
			s.logLevel = st.Value
		case "metrics_listen", "metrics_textfile":
			if err := observe.CheckSetting(st.Key.Name, st.Value); err != nil {
				return nil, bad(err)
			}
			if st.Key.Name == "metrics_listen" {
				s.metricsListen = st.Value
			} else {
				s.metricsTextfile = st.Value
			}
		}
	}
	return s, nil
}

// daemonMaxSize is the daemon's --max-size: it replaces the settings
// file's max_size for the requests that do not set the variable. Set by
// runDaemon before it serves.
var daemonMaxSize string

// sourceDaemonFlag is the source of a max_size given by daemon --max-size.
const sourceDaemonFlag config.Source = "daemon --max-size"

// storeOptions returns the cache options of a command that uses the cache
// directory dir (relative to env's directory; "" for the default).
func storeOptions(env *cli.Env, dir string) (cache.Options, error) {
	opt, _, err := storeSettings(env, dir)
	return opt, err
}

// storeSettings is storeOptions that also reports whether the verify
// setting is on, from the same reading of the settings.
func storeSettings(env *cli.Env, dir string) (opt cache.Options, verify bool, err error) {
	dir, err = cacheDirOf(env, dir)
	if err != nil {
		return cache.Options{}, false, err
	}
	s, err := resolveSettings(env.Memo, dir, env.Getenv)
	if err != nil {
		return cache.Options{}, false, err
	}
	jit.SetJobs(s.jobs)
	return cache.Options{MaxBytes: s.maxBytes, ReadOnly: s.readOnly}, s.verify, nil
}

func runConfigGet(env *cli.Env, o *configOptions, args []string) error {
	if _, ok := config.Lookup(args[0]); !ok {
		return unknownKey(args[0])
	}
	dir, err := cacheDirOf(env, o.cacheDir)
	if err != nil {
		return err
	}
	f, err := loadConfig(dir)
	if err != nil {
		return err
	}
	list := config.Resolve(f, env.Getenv)
	if err := checkEnvSettings(list); err != nil {
		return err
	}
	for _, s := range list {
		if s.Key.Name == args[0] {
			fmt.Fprintln(env.Stdout, s.Value)
		}
	}
	return nil
}

// Bounds of daemon_timeout.
const (
	minDaemonTimeout = time.Millisecond
	maxDaemonTimeout = 24 * time.Hour
)

// Bounds of compile_timeout.
const (
	minCompileTimeout = time.Millisecond
	maxCompileTimeout = 7 * 24 * time.Hour
)

// checkEnvSettings refuses a setting in force from the environment whose
// value the setting does not accept, naming the variable, so that it is
// never shown as if in force. PYPTO_CACHE_IDENTITY is PyPTO's variable:
// an invalid value makes the toolchain identity unusable (the build runs
// uncached with a warning) instead.
func checkEnvSettings(list []config.Setting) error {
	for _, s := range list {
		if s.Source != config.FromEnv || s.Key.Env == jit.PolicyVariable {
			continue
		}
		if err := config.Check(s.Key, s.Value, checkSetting); err != nil {
			return cli.Invalid(fmt.Errorf("%s: %w", s.Key.Env, err))
		}
	}
	return nil
}

// runConfigSet runs set and unset: under the file's lock, read the file,
// change one line, write it durably.
func runConfigSet(env *cli.Env, o *configOptions, args []string) error {
	unset := len(args) == 1
	key, ok := config.Lookup(args[0])
	if !ok {
		return unknownKey(args[0])
	}
	path, err := configPath(env, o.cacheDir)
	if err != nil {
		return err
	}
	if !unset {
		// Validate before anything is created: a usage error has no side
		// effects. What is wrong is the value on the command line, so
		// the error names the key as given there, neither the file nor
		// the key's variable.
		if err := config.Check(key, strings.TrimSpace(args[1]), checkSetting); err != nil {
			return cli.Usagef("config set %s: %v", args[0], err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Nothing is written into another user's cache directory.
	if err := cache.CheckFile(filepath.Dir(path), config.FileName); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := client.Flock(lock, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	f, err := readConfig(filepath.Dir(path))
	if err != nil {
		return err
	}
	if unset {
		err = f.Unset(args[0])
	} else {
		err = f.Set(args[0], args[1], checkSetting)
	}
	if err != nil {
		return cli.Usagef("config: %v", err)
	}
	return f.Save()
}

func runConfigList(env *cli.Env, o *configOptions, args []string) error {
	path, err := configPath(env, o.cacheDir)
	if err != nil {
		return err
	}
	f, err := loadConfig(filepath.Dir(path))
	if err != nil {
		return err
	}
	resolved := config.Resolve(f, env.Getenv)
	if err := checkEnvSettings(resolved); err != nil {
		return err
	}
	list := config.Reports(resolved)
	if o.json {
		return cli.WriteJSON(env.Stdout, struct {
			File     string          `json:"file"`
			Settings []config.Report `json:"settings"`
		}{path, list})
	}
	config.WriteReports(env.Stdout, path, list, "")
	return nil
}

// sharedStore returns the daemon's store as a request with options opt
// sees it. Requests with the same settings share one limit.Store: the
// driver joins concurrent builds of one key per store value, so that 64
// clients building the same request compile it once.
func sharedStore(opt cache.Options) cacheStore {
	k := limit.New(engine.store, opt.MaxBytes, opt.ReadOnly)
	s, _ := requestStores.LoadOrStore(*k, k)
	return s.(*limit.Store)
}

// requestStores holds one *limit.Store per distinct limit.Store value.
var requestStores sync.Map

// unknownKey is the usage error for a key config does not know: the
// closest known keys, then all of them.
func unknownKey(name string) error {
	names := make([]string, len(config.Known))
	for i, k := range config.Known {
		names[i] = k.Name
	}
	return cli.Usagef("config: unknown key %q%s (keys: %s)", name, cli.DidYouMean(name, "", names), strings.Join(names, ", "))
}

// compileContext returns ctx carrying what the compiles of a build using
// the cache directory dir need from its command: the compile_timeout in
// force (jit.WithCompileTimeout) and, in the daemon, a report of a
// stopped compiler in the request's progress frames (jit.WithProgress).
func compileContext(ctx context.Context, env *cli.Env, dir string) (context.Context, error) {
	dir, err := cacheDirOf(env, dir)
	if err != nil {
		return nil, err
	}
	s, err := resolveSettings(env.Memo, dir, env.Getenv)
	if err != nil {
		return nil, err
	}
	ctx = jit.WithCompileTimeout(ctx, s.compileTimeout)
	return jit.WithProgress(ctx, func(doing string) { daemon.Progress(ctx, doing, -1) }), nil
}
