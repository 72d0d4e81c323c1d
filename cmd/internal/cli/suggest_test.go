package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestSuggest checks the candidates Suggest offers for typical typos and
// that it offers nothing for an unrelated word.
func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		word       string
		candidates []string
		want       []string
	}{
		{"buidl", []string{"build", "cache", "config"}, []string{"build"}},
		{"stat", []string{"stats", "ls", "show", "verify"}, []string{"stats"}},
		{"requets", []string{"request", "json", "no-daemon"}, []string{"request"}},
		{"maxsize", []string{"max_size", "readonly", "remote"}, []string{"max_size"}},
		{"zzzz", []string{"build", "cache"}, nil},
		{"build", []string{"build"}, nil},
		{"", []string{"build"}, nil},
		{"ls", []string{"ls", "lsx", "s"}, []string{"lsx", "s"}},
	} {
		if got := Suggest(tc.word, tc.candidates); !slices.Equal(got, tc.want) {
			t.Errorf("Suggest(%q, %q) = %q, want %q", tc.word, tc.candidates, got, tc.want)
		}
	}
	if got, want := DidYouMean("buidl", "", []string{"build"}), "; did you mean build?"; got != want {
		t.Errorf("DidYouMean = %q, want %q", got, want)
	}
}

// TestEditDistance checks the distance on runes, transpositions counted
// as one edit.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"buidl", "build", 1}, {"ehco", "echo", 1}, {"ca", "abc", 3}, {"é", "e", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestMan checks the manual page: made of every listed command's help,
// hidden ones left out, roff requests escaped.
func TestMan(t *testing.T) {
	var ran []string
	p := frameworkProgram(&ran)
	p.Commands[0].Long = ".starts with a period and has a \\ backslash\n"
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := p.Main(context.Background(), env, []string{"help", "--man"}); code != 0 {
		t.Fatalf("help --man: exit %d: %s", code, errb.String())
	}
	man := out.String()
	for _, want := range []string{
		".TH PROG 1 ", ".SH NAME\nprog \\- a test program\n", `.SS "prog echo"`, `.SS "prog group fail"`,
		"--verbose", "\\&.starts with a period and has a \\e backslash", `.SH "EXIT STATUS"`,
	} {
		if !strings.Contains(man, want) {
			t.Errorf("man page lacks %q:\n%s", want, man)
		}
	}
	if strings.Contains(man, "secret") || strings.Contains(man, `"prog hidden"`) {
		t.Errorf("man page lists a hidden command:\n%s", man)
	}
	if code := p.Main(context.Background(), env, []string{"help", "--man", "echo"}); code != ExitUsage {
		t.Errorf("help --man echo: exit %d, want %d", code, ExitUsage)
	}
}
