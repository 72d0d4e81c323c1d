package api

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// encoded is what cli.WriteJSON's Encoder writes for r in compact form,
// without the newline: what AppendJSON must write.
func encoded(t testing.TB, r *Response) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// fullResponse has every field of a Response set, with strings an
// encoder escapes.
func fullResponse() *Response {
	tricky := "a<b>&c \"q\" \\ \n\t\x01 \u2028 \xff é 𝄞"
	return &Response{
		Status: StatusMiss, Key: "k<1>", Hashid: "sha256:" + tricky,
		Outputs:  []Output{{Name: "kernel_0.so", Path: "/p/" + tricky, Size: 15032, Digest: "ab"}, {Name: "x", Path: "", Size: -1}},
		Callable: "/p/chip_callable.bin", Unavailable: []string{tricky, ""}, MissReason: "no entry & more",
		HitTier: "local", Warnings: []string{"w1", tricky}, Error: tricky,
		Timings: Timings{Identity: 0.123, Lookup: 1e-7, Compile: 1e21, Publish: -0.5, Total: 123456.789,
			Phases: map[string]int64{"sources": 25, "lookup": -3, "a<b": 1, "é": 0}},
		Changed:      []Change{{Name: "header vadd.h", Input: "header vadd.h", Was: tricky, Now: "n"}, {Name: "x", Input: "y"}},
		SavedMS:      4.5e-9,
		ChangedSince: &Predecessor{Request: tricky, First: true, Key: "k", Note: "gone"},
		Units:        []Unit{{Name: "kernels[0] " + tricky, Key: "k", Status: "compiled", Reason: tricky, CompileMS: 12.5}, {Name: "o", Key: "k2", Status: "hit"}},
	}
}

// TestResponseAppendJSON: AppendJSON writes the Encoder's bytes for
// responses with fields set and unset, after whatever b held.
func TestResponseAppendJSON(t *testing.T) {
	hit := &Response{Status: StatusHit, Key: "34", Hashid: "sha256:e8", HitTier: "local", SavedMS: 812,
		Outputs: []Output{{Name: "chip_callable.bin", Path: "/w/out/chip_callable.bin", Size: 55064, Digest: "d1"}},
		Timings: Timings{Identity: 0.091, Lookup: 0.07, Total: 0.257, Phases: map[string]int64{"headers": 30, "verify": 30}}}
	for name, r := range map[string]*Response{
		"zero": {}, "hit": hit, "full": fullResponse(),
		"empty lists":      {Status: StatusUncached, Outputs: []Output{}, Unavailable: []string{}, Changed: []Change{}, Timings: Timings{Phases: map[string]int64{}}},
		"predecessor only": {Status: StatusMiss, ChangedSince: &Predecessor{}},
		"small floats":     {Timings: Timings{Identity: 5e-324, Lookup: 1e-6, Compile: 9.99e-7, Publish: 1e20, Total: math.MaxFloat64}},
		"negative zero":    {SavedMS: math.Copysign(0, -1), Timings: Timings{Total: math.Copysign(0, -1)}},
	} {
		want, err := encoded(t, r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, ok := r.AppendJSON([]byte("prefix"))
		if !ok || string(got) != "prefix"+string(want) {
			t.Errorf("%s: AppendJSON = %s (%v)\nwant         %s", name, got, ok, want)
		}
	}
}

// TestResponseAppendJSONRefuses: a time that is not a finite number,
// which the Encoder refuses, is refused too, and b is left as it was.
func TestResponseAppendJSONRefuses(t *testing.T) {
	for _, r := range []*Response{
		{Timings: Timings{Total: math.NaN()}},
		{Timings: Timings{Lookup: math.Inf(1)}},
		{SavedMS: math.Inf(-1)},
	} {
		if _, err := encoded(t, r); err == nil {
			t.Fatalf("the Encoder wrote %+v", r)
		}
		if got, ok := r.AppendJSON([]byte("prefix")); ok || string(got) != "prefix" {
			t.Errorf("AppendJSON(%+v) = %q, %v; want the prefix alone and false", r.Timings, got, ok)
		}
	}
}

// TestFullResponseSetsEveryField: fullResponse sets every field of a
// Response and of the types in it, so that a field added to them fails
// here until AppendJSON (and fullResponse) write it.
func TestFullResponseSetsEveryField(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s is not set", path)
				return
			}
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
				return
			}
			walk(path+"[0]", v.Index(0))
		default:
			if v.IsZero() {
				t.Errorf("%s is not set", path)
			}
		}
	}
	walk("Response", reflect.ValueOf(fullResponse()))
}

// FuzzResponseAppendJSON: for any strings and numbers, AppendJSON writes
// the Encoder's bytes, or refuses what the Encoder refuses.
func FuzzResponseAppendJSON(f *testing.F) {
	f.Add("hit", "k", "a<b>", "x\xffy", 0.25, 1e-7, int64(3), true)
	f.Add("", "", "", "\u2028", math.Inf(1), 0.0, int64(-1), false)
	f.Fuzz(func(t *testing.T, status, key, s1, s2 string, f1, f2 float64, n int64, more bool) {
		r := &Response{Status: Status(status), Key: key, Error: s1,
			Timings: Timings{Identity: f1, Total: f2, Phases: map[string]int64{s1: n, s2: -n}}}
		if more {
			r.Outputs = []Output{{Name: s1, Path: s2, Size: n, Digest: key}}
			r.Warnings = []string{s2, s1}
			r.Changed = []Change{{Name: s1, Input: s2, Was: key}}
			r.SavedMS = f1
			r.ChangedSince = &Predecessor{Request: s2, First: n%2 == 0, Note: s1}
			r.Units = []Unit{{Name: s1, Key: key, Status: s2, Reason: s1, CompileMS: f2}}
		}
		want, err := encoded(t, r)
		got, ok := r.AppendJSON(nil)
		if ok != (err == nil) || ok && !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s (%v)\nEncoder     %s (%v)", got, ok, want, err)
		}
	})
}
