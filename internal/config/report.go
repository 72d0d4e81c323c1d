package config

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Report is one setting as config list --json and daemon status --json
// print it.
type Report struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"` // environment, config file, default
	Env    string `json:"env"`
	Line   int    `json:"line,omitempty"`
}

// Reports are the reports of the settings list.
func Reports(list []Setting) []Report {
	out := make([]Report, 0, len(list))
	for _, s := range list {
		out = append(out, Report{s.Key.Name, s.Value, string(s.Source), s.Key.Env, s.Line})
	}
	return out
}

// WriteReports prints settings for people, one per line, each indented by
// indent, naming where its value comes from (the variable, the line of the
// settings file at path, or the default).
func WriteReports(w io.Writer, path string, list []Report, indent string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range list {
		from := s.Source
		switch s.Source {
		case string(FromEnv):
			from = s.Env
		case string(FromFile):
			from = fmt.Sprintf("%s:%d", path, s.Line)
		}
		fmt.Fprintf(tw, "%s%s = %s\t(%s)\n", indent, s.Key, s.Value, from)
	}
	return tw.Flush()
}
