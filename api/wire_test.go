package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// wireRequests are requests whose strings hold what appendString escapes.
var wireRequests = []DaemonRequest{
	{Protocol: DaemonProtocol, Op: OpHello},
	{Protocol: DaemonProtocol, Op: OpRun, Args: []string{"build", "--request", "r.json", "--json"}, Dir: "/w/ex",
		Env:   []string{"PATH=/usr/bin", `Q="a\b"`, "T=\t\n\r\b\f\x00\x1f", "H=<a href='x'>&amp;</a>", "U=é ☃ 𝄞 \u2028\u2029", "BAD=\xff\xfe x"},
		Stdin: []byte{0, 1, 2, 250}, StdoutJSON: true},
	{Protocol: -3, Op: "", Args: []string{}, Env: []string{""}},
}

// wireResponses are the JSON of replies and hello files in the forms
// daemons and the Python client write, and forms the fast decoder leaves
// to encoding/json.
var wireResponses = []string{
	`{"protocol":2,"exit":0,"stdout":"aGl0Cg==","stderr":""}`,
	`{"protocol":2,"exit":0,"pid":41,"env_names":["CC","PATH"],"depends":"/c/ptojit.conf","depends_stamp":"absent","no_answer":"30s"}`,
	`{"protocol":2,"frame":"progress","doing":"verifying","fraction":0.25,"exit":0,"pid":7}`,
	`{"protocol":2,"error":"no \"such\" key \u003cx\u003e","kind":"miss","data":{"key":"ab","reason":"é\/\t"},"exit":1}`,
	`{"protocol":2,"exit":0,"stdout_value":{"status": "hit", "outputs": [1, 2.5e3, true, null, {"a": []}]},"status":[1,"x"]}`,
	` { "protocol" : 2 , "exit" : 0 , "unknown" : {"deep": [null, false, "s"]} } `,
	`{"protocol":2,"Exit":3}`,                          // a key folded: encoding/json matches it
	`{"protocol":2,"exit":1,"exit":2}`,                 // repeated: the last wins
	`{"protocol":2,"data":{"a":"1"},"data":{"b":"2"}}`, // repeated: the maps merge
	`{"protocol":2,"exit":null}`,
	`{"protocol":2.5,"exit":0}`,
	`{"protocol":1e1}`,
	`{"protocol":2,"fraction":1e400}`,
	`{"protocol":2,"doing":"\ud834\udd1e"}`,
	`{"protocol":2,"doing":"\ud834"}`,
	"{\"protocol\":2,\"doing\":\"\xff\"}",
	`{"protocol":2,"stdout":"not base64!"}`,
	`{"protocol":2,"exit":0}x`,
	`{"protocol":2,"exit":01}`,
	`{"protocol":2,"exit":-0}`,
	`[1]`,
	``,
	`{"protocol":2,"kelvin\u212a":1}`,
}

// TestAppendRequestIsMarshal: the request encoder writes json.Marshal's
// bytes.
func TestAppendRequestIsMarshal(t *testing.T) {
	for _, r := range wireRequests {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRequest(nil, &r); !bytes.Equal(got, want) {
			t.Errorf("appendRequest:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
}

// checkDecode decodes b as a T with Unmarshal and with json.Unmarshal and
// fails unless both give the same value, or both an error.
func checkDecode[T any](t *testing.T, b []byte) (fast bool) {
	t.Helper()
	var got, want T
	fast = decodeFrame(b, new(T))
	gerr, werr := Unmarshal(b, &got), json.Unmarshal(b, &want)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: Unmarshal error %v, json.Unmarshal error %v", b, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nUnmarshal      %#v\njson.Unmarshal %#v", b, got, want)
	}
	if fast && werr != nil {
		t.Fatalf("%q: decoded without reflection, but json.Unmarshal fails: %v", b, werr)
	}
	return fast
}

// TestUnmarshalIsJSON: every frame decodes as json.Unmarshal decodes it;
// the forms encoders write take the fast path.
func TestUnmarshalIsJSON(t *testing.T) {
	for _, r := range wireRequests {
		b, _ := json.Marshal(&r)
		if !checkDecode[DaemonRequest](t, b) {
			t.Errorf("%s: json.Marshal's request is not decoded without reflection", b)
		}
	}
	fast := 0
	for _, s := range wireResponses {
		if checkDecode[DaemonResponse](t, []byte(s)) {
			fast++
		}
		checkDecode[DaemonRequest](t, []byte(s))
	}
	if fast < 6 {
		t.Errorf("%d of the replies decoded without reflection, want the first 6 at least", fast)
	}
	// A value that is not zero is merged into by json.Unmarshal: left to it.
	r := DaemonResponse{Kind: "kept"}
	if err := Unmarshal([]byte(`{"protocol":2}`), &r); err != nil || r.Kind != "kept" || r.Protocol != 2 {
		t.Errorf("into a set value: %+v, %v; want the field kept, as json.Unmarshal does", r, err)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range wireResponses {
		f.Add([]byte(s))
	}
	for _, r := range wireRequests {
		b, _ := json.Marshal(&r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode[DaemonResponse](t, b)
		checkDecode[DaemonRequest](t, b)
	})
}

func FuzzAppendRequest(f *testing.F) {
	f.Add(1, "run", "build", "/w", "A=\x00<é\xff", []byte{1}, true)
	f.Fuzz(func(t *testing.T, protocol int, op, arg, dir, env string, stdin []byte, asJSON bool) {
		r := DaemonRequest{Protocol: protocol, Op: op, Args: []string{arg}, Dir: dir, Env: []string{env, arg}, Stdin: stdin, StdoutJSON: asJSON}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Skip()
		}
		if got := appendRequest(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("appendRequest:\n%s\njson.Marshal:\n%s", got, want)
		}
	})
}

// TestAppendResponseIsMarshal: the reply encoder writes json.Marshal's
// bytes (a compact StdoutValue included), and leaves a reply with a
// fraction, data or a status to it.
func TestAppendResponseIsMarshal(t *testing.T) {
	half := 0.5
	for _, r := range []DaemonResponse{
		{Protocol: DaemonProtocol},
		{Protocol: DaemonProtocol, Exit: 1, Stdout: []byte("hit\n"), Stderr: []byte{0, 255}},
		{Protocol: DaemonProtocol, Frame: FrameProgress, Doing: "verifying <all> & \"more\"\n", PID: 9},
		{Protocol: DaemonProtocol, Error: "bad \xff", Kind: KindMiss, StdoutValue: json.RawMessage(`{"status":"hit","n":[1,2]}`)},
		{Protocol: DaemonProtocol, PID: 3, EnvNames: []string{"A", "B\u2028"}, Depends: "/c/ptojit.conf", DependsStamp: "1:2:3", NoAnswer: "30s"},
	} {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendResponse(nil, &r)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("appendResponse (%v):\n%s\njson.Marshal:\n%s", ok, got, want)
		}
	}
	for _, r := range []DaemonResponse{{Fraction: &half}, {Data: map[string]string{}}, {Status: json.RawMessage(`{}`)}} {
		if b, ok := appendResponse(nil, &r); ok {
			t.Errorf("%+v encoded by appendResponse as %s, want it left to json.Marshal", r, b)
		}
	}
}

func FuzzAppendResponse(f *testing.F) {
	f.Add(2, "progress", "doing <x>", "error \xff", "miss", []byte("out"), []byte{0}, 1, 77, "A", "/d", "1:2", "30s")
	f.Fuzz(func(t *testing.T, protocol int, frame, doing, errText, kind string, stdout, stderr []byte, exit, pid int, name, depends, stamp, noAnswer string) {
		r := DaemonResponse{Protocol: protocol, Frame: frame, Doing: doing, Error: errText, Kind: kind, Stdout: stdout, Stderr: stderr,
			Exit: exit, PID: pid, EnvNames: []string{name}, Depends: depends, DependsStamp: stamp, NoAnswer: noAnswer}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Skip()
		}
		if got, ok := appendResponse(nil, &r); !ok || !bytes.Equal(got, want) {
			t.Fatalf("appendResponse (%v):\n%s\njson.Marshal:\n%s", ok, got, want)
		}
	})
}

// jsonNames are the JSON names of t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// TestWireFieldsCoverTheTypes: a field added to DaemonRequest or
// DaemonResponse must be added to the fast decoder, or its frames would
// lose it; and the encoders must write it (a value with every field set
// encodes as json.Marshal encodes it, or is left to it).
func TestWireFieldsCoverTheTypes(t *testing.T) {
	for _, n := range jsonNames(reflect.TypeFor[DaemonRequest]()) {
		if requestFields[n] == nil {
			t.Errorf("DaemonRequest field %q: requestFields cannot read it", n)
		}
	}
	for _, n := range jsonNames(reflect.TypeFor[DaemonResponse]()) {
		if responseFields[n] == nil {
			t.Errorf("DaemonResponse field %q: responseFields cannot read it", n)
		}
	}
	if a, b := len(requestFields), reflect.TypeFor[DaemonRequest]().NumField(); a != b {
		t.Errorf("requestFields reads %d keys, DaemonRequest has %d fields", a, b)
	}
	if a, b := len(responseFields), reflect.TypeFor[DaemonResponse]().NumField(); a != b {
		t.Errorf("responseFields reads %d keys, DaemonResponse has %d fields", a, b)
	}
	// Every field set but those that send a reply to json.Marshal.
	var resp DaemonResponse
	fillFields(reflect.ValueOf(&resp).Elem())
	resp.Fraction, resp.Data, resp.Status = nil, nil, nil
	want, _ := json.Marshal(&resp)
	if got, ok := appendResponse(nil, &resp); !ok || !bytes.Equal(got, want) {
		t.Errorf("every field set: appendResponse (%v)\n%s\njson.Marshal\n%s", ok, got, want)
	}
	var req DaemonRequest
	fillFields(reflect.ValueOf(&req).Elem())
	want, _ = json.Marshal(&req)
	if got := appendRequest(nil, &req); !bytes.Equal(got, want) {
		t.Errorf("every field set: appendRequest\n%s\njson.Marshal\n%s", got, want)
	}
}

// fillFields sets every int, string, bool, string list and byte slice
// field of the struct v to a value that is not zero (bytes: a JSON value).
func fillFields(v reflect.Value) {
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.String:
			f.SetString("s" + strconv.Itoa(i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.String {
				f.Set(reflect.ValueOf([]string{"n" + strconv.Itoa(i)}))
			} else {
				f.SetBytes([]byte(`"v"`))
			}
		}
	}
}
