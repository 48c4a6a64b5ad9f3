package reporttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden compares got with the golden file at path, or rewrites the file
// when update is set (the -update flag of the calling test package). A
// mismatch fails the test with a line diff: "-" lines are the golden file,
// "+" lines what the test produced.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) == string(got) {
		return
	}
	t.Errorf("%s differs (- golden, + got; go test -update rewrites it):\n%s", path, Diff(string(want), string(got)))
}

// Diff is a line diff of a and b with 3 lines of context around each
// change, enough to read a golden mismatch without external tools.
func Diff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// Longest common subsequence table; golden files are small enough for
	// the quadratic table.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
		ln   int // line number in a (for ' ' and '-') or b ('+')
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i], i + 1})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, line{'+', y[j], j + 1})
			j++
		default:
			ops = append(ops, line{'-', x[i], i + 1})
			i++
		}
	}
	const context = 3
	var sb strings.Builder
	last := -1
	for k, op := range ops {
		if op.op == ' ' {
			near := false
			for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
				if ops[d].op != ' ' {
					near = true
					break
				}
			}
			if !near {
				continue
			}
		}
		if last >= 0 && k != last+1 {
			sb.WriteString("...\n")
		}
		if last < 0 || k != last+1 {
			fmt.Fprintf(&sb, "@@ line %d\n", op.ln)
		}
		fmt.Fprintf(&sb, "%c %s\n", op.op, op.text)
		last = k
	}
	return sb.String()
}
