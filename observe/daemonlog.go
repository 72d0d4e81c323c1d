package observe

import (
	"slices"

	"github.com/ptojit/ptojit/api"
)

// Levels of the daemon log (log_level), least verbose first: the index
// of the name in logLevels.
const (
	levelError = iota
	levelWarn
	levelInfo
	levelDebug
)

// Log is the daemon log at the level of log_level: lines above it
// are dropped. Its lifecycle lines are info. Safe for concurrent use
// when logf is.
type Log struct {
	logf  func(format string, args ...any)
	level int
}

// NewLog returns the log that writes with logf the lines at level
// (a log_level value; an unknown one is info) and below.
func NewLog(logf func(format string, args ...any), level string) *Log {
	l := slices.Index(logLevels, level)
	if l < 0 {
		l = levelInfo
	}
	return &Log{logf: logf, level: l}
}

// at writes a line of the given level.
func (l *Log) at(level int, format string, args ...any) {
	if l != nil && level <= l.level {
		l.logf(format, args...)
	}
}

// Info writes an info line (the daemon's lifecycle).
func (l *Log) Info(format string, args ...any) { l.at(levelInfo, format, args...) }

// Build logs a build the daemon answered: each warning its client sees
// (a breaker open, a store unusable) at warn, and at debug one line with
// its status, key prefix and duration.
func (l *Log) Build(r *api.Response) {
	for _, w := range r.Warnings {
		l.at(levelWarn, "warning: %s", w)
	}
	l.at(levelDebug, "build %s %s %.1f ms", r.Status, short12(r.Key), r.Timings.Total)
}

// short12 is the first 12 characters of s (a key prefix).
func short12(s string) string { return s[:min(len(s), 12)] }
