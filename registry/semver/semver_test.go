package semver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareOrdersSemverOrgExample orders the example of semver.org 2.0.0
// (section 11), each version below the next, and equal build metadata
// aside.
func TestCompareOrdersSemverOrgExample(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	vs := make([]Version, len(order))
	for i, s := range order {
		v, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if v.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, v.String())
		}
		vs[i] = v
	}
	for i := range vs {
		for j := range vs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := vs[i].Compare(vs[j]); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", vs[i], vs[j], got, want)
			}
		}
	}
	a, _ := Parse("1.2.3+build.1")
	b, _ := Parse("1.2.3+build.2")
	if a.Compare(b) != 0 || a.Build != "build.1" {
		t.Errorf("build metadata: Compare = %d, Build = %q; want 0 and build.1", a.Compare(b), a.Build)
	}
}

// TestParseRefusesWhatIsNotSemver names the part of each bad version.
func TestParseRefusesWhatIsNotSemver(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty version"},
		{"1.2", "is not MAJOR.MINOR.PATCH"},
		{"v1.2.3", `"v1" is not a number`},
		{"1.02.3", `"02" is not a number without leading zeros`},
		{"1.2.3-", "prerelease: empty identifier"},
		{"1.2.3-01", "leading zero"},
		{"1.2.3-a_b", "other than [0-9A-Za-z-]"},
		{"1.2.3+", "build metadata: empty identifier"},
		{"1.2.99999999999999999999", "is too large"},
		{"1.2.3-" + strings.Repeat("a", 130), "longer than 128 bytes"},
	} {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

// TestVersionTravelsInJSONAsItsText round-trips a Version through JSON as
// the text it was written as, and refuses a bad one.
func TestVersionTravelsInJSONAsItsText(t *testing.T) {
	v, err := Parse("1.2.3-rc.1+b7")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct{ V Version }{v})
	if err != nil || string(b) != `{"V":"1.2.3-rc.1+b7"}` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var back struct{ V Version }
	if err := json.Unmarshal(b, &back); err != nil || back.V.String() != v.String() || back.V.Compare(v) != 0 || back.V.Build != "b7" {
		t.Fatalf("json.Unmarshal(%s) = %+v, %v", b, back.V, err)
	}
	if err := json.Unmarshal([]byte(`{"V":"1.2"}`), &back); err == nil {
		t.Error("json.Unmarshal of version 1.2 succeeded")
	}
}
