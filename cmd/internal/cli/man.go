package cli

import (
	"fmt"
	"io"
	"strings"
)

// ProgramSummary is ptojit's one-line description: the client's and the
// engine's alike, since both are ptojit to the user (help, the manual page's
// NAME).
const ProgramSummary = "content-addressed build cache and JIT compiler driver for PTO kernels"

// writeMan writes the program's manual page (man(7) macros) from the same
// text its help prints: the summary, every listed command and subcommand
// with its synopsis, description and flags, and the exit codes.
func (p *Program) writeMan(w io.Writer) error {
	var b strings.Builder
	up := strings.ToUpper(p.Name)
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"%s %s\" \"User Commands\"\n", up, p.Name, manEscape(VersionString()))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", p.Name, manEscape(p.Summary))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n\\fIcommand\\fR [\\fIarguments\\fR]\n", p.Name)
	fmt.Fprintf(&b, ".SH DESCRIPTION\nRun '%s help COMMAND [SUBCOMMAND]' or '%s COMMAND --help' for the help of one command; the sections below are that help.\n", p.Name, p.Name)
	b.WriteString(".SH COMMANDS\n")
	var walk func(path []string, c *Command)
	walk = func(path []string, c *Command) {
		path = append(path, c.Name)
		fs, _, _ := newFlagSet(path, c)
		usage := c.Usage
		if usage == "" {
			usage = strings.Join(path[1:], " ")
		}
		fmt.Fprintf(&b, ".SS \"%s\"\n.B %s %s\n.PP\n", manEscape(strings.Join(path, " ")), p.Name, manEscape(usage))
		if c.Summary != "" {
			fmt.Fprintf(&b, "%s\n", manEscape(c.Summary))
		}
		if c.Long != "" {
			fmt.Fprintf(&b, ".PP\n.nf\n%s\n.fi\n", manLines(strings.TrimRight(c.Long, "\n")))
		}
		if fs.HasAvailableFlags() {
			fmt.Fprintf(&b, ".PP\nFlags:\n.nf\n%s.fi\n", manLines(fs.FlagUsages()))
		}
		for _, s := range c.Subcommands {
			if !s.Hidden {
				walk(path, s)
			}
		}
	}
	for _, c := range p.all() {
		if !c.Hidden {
			walk([]string{p.Name}, c)
		}
	}
	fmt.Fprintf(&b, ".SH \"EXIT STATUS\"\n%s\n", manEscape(strings.TrimPrefix(exitCodesHelp, "Exit codes: ")))
	_, err := io.WriteString(w, b.String())
	return err
}

// manEscape escapes text for roff: backslashes, and a leading period or
// apostrophe (which would start a request).
func manEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// manLines escapes every line of text.
func manLines(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = manEscape(l)
	}
	return strings.Join(lines, "\n")
}
