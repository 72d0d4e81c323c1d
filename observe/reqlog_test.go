package observe

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The request log stays within twice its size limit, keeps its newest
// records in order across a rotation, and names the file and line of a
// record that does not parse.
func TestRequestLogRotates(t *testing.T) {
	dir := t.TempDir()
	const max = 1000
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 40 {
		if err := AppendRequestLog(dir, max, Record{Time: t0.Add(time.Duration(i) * time.Minute), Status: "hit", Total: float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{RequestLogName, RequestLogName + ".1"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() > max {
			t.Fatalf("%s: %v, size over %d", name, err, max)
		}
	}
	recs, err := ReadRequestLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || len(recs) >= 40 || recs[len(recs)-1].Total != 39 {
		t.Fatalf("%d records kept, the last %+v; want the newest, fewer than 40", len(recs), recs[len(recs)-1])
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Total != recs[i-1].Total+1 {
			t.Fatalf("records out of order at %d: %v after %v", i, recs[i].Total, recs[i-1].Total)
		}
	}
	if err := AppendRequestLog(dir, 0, Record{Status: "miss"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadRequestLog(dir); len(again) != len(recs) {
		t.Fatal("log_max_size 0 wrote a record")
	}
	_, err = parseRequestLog("requests.log", strings.NewReader("{\"status\":\"hit\"}\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "requests.log:2:") {
		t.Fatalf("a bad line: %v, want requests.log:2", err)
	}
}

// The log file this process keeps open is given up when its path names
// another file: removed, or replaced by another process's, the next record
// goes to the file the path names.
func TestRequestLogFollowsThePath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, RequestLogName)
	add := func(total float64) {
		t.Helper()
		if err := AppendRequestLog(dir, 1<<20, Record{Status: "hit", Total: total}); err != nil {
			t.Fatal(err)
		}
	}
	totals := func() []float64 {
		t.Helper()
		recs, err := ReadRequestLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, r := range recs {
			out = append(out, r.Total)
		}
		return out
	}
	add(1)
	add(2)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	add(3)
	if got := totals(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after the log was removed: %v, want [3]", got)
	}
	other := filepath.Join(dir, "other.log")
	if err := os.WriteFile(other, []byte("{\"status\":\"miss\",\"total_ms\":9}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	add(4)
	if got := totals(); len(got) != 2 || got[0] != 9 || got[1] != 4 {
		t.Fatalf("after the log was replaced: %v, want [9 4]", got)
	}
}

// The plot of a request log over three hours is an SVG with the three
// panels per hour, their axes and every series.
func TestPlotRequestLog(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range 30 {
		status := "hit"
		if i%4 == 0 {
			status = "miss"
		}
		recs = append(recs, Record{Time: t0.Add(time.Duration(i) * 6 * time.Minute), Status: status, Saved: 400, Bytes: 1000})
	}
	p := filepath.Join(t.TempDir(), "plot.svg")
	if err := PlotRequestLog(p, recs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts := map[string]bool{}
	strokes := map[string]bool{}
	dec := xml.NewDecoder(f)
	var inText bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not XML: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			inText = x.Name.Local == "text"
			for _, a := range x.Attr {
				if a.Name.Local == "style" {
					if _, c, ok := strings.Cut(a.Value, "stroke:"); ok {
						strokes[strings.ToUpper(strings.SplitN(c, ";", 2)[0])] = true
					}
				}
			}
		case xml.CharData:
			if inText {
				texts[strings.TrimSpace(string(x))] = true
			}
		case xml.EndElement:
			inText = false
		}
	}
	for _, want := range []string{"hit rate per hour", "time saved per hour", "builds per hour", "time (UTC)", "hit rate (%)", "time saved (s)", "builds", "misses"} {
		if !texts[want] {
			t.Errorf("no text %q in the plot", want)
		}
	}
	ticks := 0
	for s := range texts {
		if strings.HasPrefix(s, "12-01 ") {
			ticks++
		}
	}
	if ticks < 2 {
		t.Errorf("%d time ticks on the X axes, want several", ticks)
	}
	for _, c := range []string{"#1F77B4", "#2CA02C", "#444444", "#D62728"} {
		if !strokes[c] {
			t.Errorf("no series drawn in %s", c)
		}
	}
	if err := PlotRequestLog(p, nil); err == nil {
		t.Error("an empty log plotted")
	}
}
