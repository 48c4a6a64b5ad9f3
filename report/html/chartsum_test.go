package html

import "testing"

// TestChartHash: the generated hash and size are the embedded library's
// (web/package-lock.json pins it; make build copies it into vendor/).
func TestChartHash(t *testing.T) {
	chart, err := ChartJS()
	if err != nil {
		t.Fatal(err)
	}
	if len(chart) != chartSize || hash(chart) != chartHash {
		t.Errorf("vendor/chart.umd.min.js (%d bytes, %s) is not the library chartsum.go was generated from (%d bytes, %s): run go generate ./report/html",
			len(chart), hash(chart), chartSize, chartHash)
	}
}
