package ops

import (
	"errors"
	"strings"
	"testing"
)

// TestQueryText turns command-line text into queries, and refuses bad
// text with a *QueryTextError naming the flag.
func TestQueryText(t *testing.T) {
	q, err := (&QueryText{Op: "example.add", DType: "f32", Shape: "4,8", Sync: "blocking", HostBudget: "64",
		Params: []string{"alpha@2=1.5"}}).Query()
	if err != nil || !q.Uniform || len(q.Tensors) != 1 || q.Tensors[0].DType != F32 || len(q.Tensors[0].Shape) != 2 ||
		q.HostBudget != 64 || q.DeviceBudget != Unlimited || len(q.Params) != 1 || q.Params[0].Version != 2 {
		t.Fatalf("Query = %+v, %v", q, err)
	}
	q, err = (&QueryText{Op: "example.add", Tensors: []string{"f32:4", "i32:2,2:2,1"}, Sync: "async"}).Query()
	if err != nil || q.Uniform || len(q.Tensors) != 2 || q.SyncMode != SyncAsync {
		t.Fatalf("Query of --tensor = %+v, %v", q, err)
	}
	for _, tc := range []struct {
		text QueryText
		want string
	}{
		{QueryText{}, "--op NAME is required"},
		{QueryText{Op: "add"}, `--op "add"`},
		{QueryText{Op: "example.add", Sync: "blocking"}, "describe the tensors"},
		{QueryText{Op: "example.add", Sync: "blocking", DType: "f32", Shape: "x"}, `shape "x"`},
		{QueryText{Op: "example.add", Sync: "blocking", DType: "any", Shape: "1"}, `dtype "any"`},
		{QueryText{Op: "example.add", Sync: "blocking", Tensors: []string{"f32"}}, `--tensor "f32"`},
		{QueryText{Op: "example.add", Sync: "blocking", DType: "f32", Shape: "1", Params: []string{"a@0=1"}}, `version "0"`},
		{QueryText{Op: "example.add", Sync: "blocking", DType: "f32", Shape: "1", HostBudget: "-1"}, `budget "-1"`},
		{QueryText{Op: "example.add", Sync: "never", DType: "f32", Shape: "1"}, "--sync"},
	} {
		_, err := tc.text.Query()
		var qe *QueryTextError
		if !errors.As(err, &qe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Query(%+v) = %v; want a QueryTextError naming %s", tc.text, err, tc.want)
		}
	}
}
