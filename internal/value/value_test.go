package value

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBool checks every accepted form, in any case, and refusals.
func TestBool(t *testing.T) {
	for _, s := range []string{"1", "true", "YES", " On ", "True"} {
		if b, err := Bool(s); err != nil || !b {
			t.Errorf("Bool(%q) = %v, %v; want true", s, b, err)
		}
	}
	for _, s := range []string{"0", "false", "No", "OFF"} {
		if b, err := Bool(s); err != nil || b {
			t.Errorf("Bool(%q) = %v, %v; want false", s, b, err)
		}
	}
	for _, s := range []string{"", "banana", "2", "y", "enabled", "1 1"} {
		_, err := Bool(s)
		var ve *Error
		if !errors.As(err, &ve) || ve.Input != s {
			t.Errorf("Bool(%q): error %v, want an *Error of the input", s, err)
		}
	}
	if _, err := Bool("banana"); err.Error() != `"banana": want 1, true, yes or on, or 0, false, no or off` {
		t.Errorf("message %q", err)
	}
}

// TestDuration checks the bounds, both included, and refusals.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{{"1s", true}, {"1m", true}, {"30s", true}, {"999ms", false}, {"61s", false}, {"forever", false}, {"", false}, {"5", false}} {
		d, err := Duration(tc.s, time.Second, time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("Duration(%q) = %v, %v; want ok %v", tc.s, d, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "from 1s to 1m0s") {
			t.Errorf("Duration(%q): message %q does not give the bounds", tc.s, err)
		}
	}
}

// TestEnum checks that only the values listed are taken.
func TestEnum(t *testing.T) {
	if v, err := Enum("build", "build", "content"); err != nil || v != "build" {
		t.Errorf("Enum(build) = %q, %v", v, err)
	}
	if _, err := Enum("Build", "build", "content"); err == nil || err.Error() != `"Build": want "build" or "content"` {
		t.Errorf("Enum(Build): %v", err)
	}
	if _, err := Enum("x", "a", "b", "c"); err == nil || err.Error() != `"x": want one of "a", "b", "c"` {
		t.Errorf("Enum(x): %v", err)
	}
}

// FuzzBool checks that Bool never panics, accepts exactly the listed forms
// (case and surrounding blanks aside), and that what it accepts reads the
// same once lowered and trimmed.
func FuzzBool(f *testing.F) {
	for _, s := range append(BoolForms, "", "banana", " ON\t", "\x00") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Bool(s)
		norm := strings.ToLower(strings.TrimSpace(s))
		listed := false
		for i, form := range BoolForms {
			if norm == form {
				listed = true
				if err != nil || b != (i < 4) {
					t.Fatalf("Bool(%q) = %v, %v", s, b, err)
				}
			}
		}
		if !listed && err == nil {
			t.Fatalf("Bool(%q) accepted a form not listed", s)
		}
	})
}

// FuzzDuration checks that Duration never panics and never returns a
// value outside its bounds.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"1s", "30s", "2m", "forever", "", "-1s", "9223372036854775807ns", "1h1h", ".5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Duration(s, time.Millisecond, time.Hour)
		if err == nil && (d < time.Millisecond || d > time.Hour) {
			t.Fatalf("Duration(%q) = %v, outside the bounds", s, d)
		}
		if err != nil && d != 0 {
			t.Fatalf("Duration(%q) = %v with error %v", s, d, err)
		}
	})
}
