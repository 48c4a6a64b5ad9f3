package chrome_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dtpa/dtpa/report/chrome"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
)

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[int64]string{0: "0.000", 1: "0.001", 999: "0.999", 1000: "1.000", 123456789: "123456.789", -1500: "-1.500",
		-9223372036854775808: "-9223372036854775.808"} {
		if got := string(chrome.AppendMicros(nil, ns)); got != want {
			t.Errorf("%d ns: %s, want %s", ns, got, want)
		}
	}
}

// TestWriter: a small trace reads back as written, names escaped.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := chrome.NewWriter(&b)
	w.ProcessName(1, `rank 0 (<h>")`, 0)
	w.ThreadName(1, 1, "MPI calls", 0)
	w.Complete(1, 1, "mpi", "MPI_Send", 1500, 250, []byte(`"bytes":8`))
	w.Complete(1, 1, "mpi", `<b>MPI_Recv</b>`, 2000, 1000, nil)
	w.FlowStart(1, 1, "mpi", "message", 1, 1500)
	w.FlowEnd(1, 1, "mpi", "message", 1, 2000)
	if err := w.Close(map[string]string{"application": "</script>"}); err != nil {
		t.Fatal(err)
	}
	if w.Events() != 8 || bytes.ContainsAny(b.Bytes(), "<>") {
		t.Errorf("%d events; markup unescaped: %s", w.Events(), b.Bytes())
	}
	if !json.Valid(b.Bytes()) {
		t.Fatalf("invalid JSON: %s", b.Bytes())
	}
	tr, err := chrometest.Read(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Processes[1] != `rank 0 (<h>")` || len(tr.Slices) != 2 || tr.Slices[0].Ts != 1500 || tr.Slices[0].Dur != 250 ||
		tr.Slices[1].Name != `<b>MPI_Recv</b>` || len(tr.Flows) != 1 || tr.Flows[0].From != 0 || tr.Flows[0].To != 1 ||
		tr.OtherData["application"] != "</script>" {
		t.Errorf("read back %+v", tr)
	}
}

// TestReadRejects: the checker refuses what viewers would mis-draw.
func TestReadRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"overlap":    `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"cat":"c","name":"a","ts":0,"dur":10},{"ph":"X","pid":1,"tid":1,"cat":"c","name":"b","ts":5,"dur":10}]}`,
		"no end":     `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"cat":"c","name":"a","ts":0,"dur":10},{"ph":"s","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":0}]}`,
		"unbound":    `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"cat":"c","name":"a","ts":0,"dur":10},{"ph":"s","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":20},{"ph":"f","bp":"e","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":0}]}`,
		"mid-slice":  `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"cat":"c","name":"a","ts":0,"dur":10},{"ph":"s","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":5},{"ph":"f","bp":"e","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":0}]}`,
		"next slice": `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"cat":"c","name":"a","ts":0,"dur":10},{"ph":"s","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":0},{"ph":"f","pid":1,"tid":1,"cat":"c","name":"m","id":1,"ts":0}]}`,
	} {
		if _, err := chrometest.Read([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
