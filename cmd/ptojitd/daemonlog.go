package main

import (
	"slices"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// Levels of the daemon log (log_level), least verbose first: the index
// of the name in logLevels.
const (
	levelError = iota
	levelWarn
	levelInfo
	levelDebug
)

// leveledLog is the daemon log at the level of log_level: lines above it
// are dropped. Its lifecycle lines are info. Safe for concurrent use
// when logf is.
type leveledLog struct {
	logf  func(format string, args ...any)
	level int
}

// daemonLog is the log of the daemon this process runs; nil in any other
// process. Set once by runDaemon before it serves.
var daemonLog *leveledLog

// newLeveledLog returns the log that writes with logf the lines at level
// (a log_level value; an unknown one is info) and below.
func newLeveledLog(logf func(format string, args ...any), level string) *leveledLog {
	l := slices.Index(logLevels, level)
	if l < 0 {
		l = levelInfo
	}
	return &leveledLog{logf: logf, level: l}
}

// at writes a line of the given level.
func (l *leveledLog) at(level int, format string, args ...any) {
	if l != nil && level <= l.level {
		l.logf(format, args...)
	}
}

// info writes an info line (the daemon's lifecycle).
func (l *leveledLog) info(format string, args ...any) { l.at(levelInfo, format, args...) }

// build logs a build the daemon answered: each warning its client sees
// (a breaker open, a store unusable) at warn, and at debug one line with
// its status, key prefix and duration.
func (l *leveledLog) build(r *api.Response) {
	for _, w := range r.Warnings {
		l.at(levelWarn, "warning: %s", w)
	}
	l.at(levelDebug, "build %s %s %.1f ms", r.Status, short12(r.Key), r.Timings.Total)
}

// daemonLogLevel is the log_level of the settings file of dir, info when
// it cannot be read.
func daemonLogLevel(dir string) string {
	s, err := resolveSettings(nil, dir, func(string) string { return "" })
	if err != nil || s.logLevel == "" {
		return "info"
	}
	return s.logLevel
}

// startDaemonLog sets daemonLog for the daemon of the cache directory dir,
// logging to env's standard error at its log_level, and returns its info
// lines' function.
func startDaemonLog(env *cli.Env, dir string) func(format string, args ...any) {
	daemonLog = newLeveledLog(daemonLogf(env), daemonLogLevel(dir))
	return daemonLog.info
}
