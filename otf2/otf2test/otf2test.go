// Package otf2test reads an OTF2 archive through otf2-print (Debian's
// otf2-tools), the reference reader, for tests of the archives dtpa
// writes: a test that parses otf2-print's listing checks the archive
// against libotf2's own reader rather than against dtpa's.
package otf2test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Record is one event record as otf2-print lists it.
type Record struct {
	Kind     string // ENTER, LEAVE, MPI_SEND, MPI_COLLECTIVE_END …
	Location uint64
	Time     uint64
	// Region is the region name of ENTER and LEAVE; Attrs the rest of
	// the line (and of its continuation lines), as printed.
	Region string
	Attrs  string
}

// Archive is what otf2-print shows of an archive.
type Archive struct {
	Records []Record
	// Counts of records by kind, and of ENTER by region name.
	Kinds  map[string]int
	Enters map[string]int
	// Defs is the global definitions listing (otf2-print -G).
	Defs string
}

// Available reports whether otf2-print can be run.
func Available() bool {
	_, err := exec.LookPath("otf2-print")
	return err == nil
}

// Print runs otf2-print on the anchor file and parses its listing; an
// error of otf2-print (a file it cannot read, a record it refuses) is an
// error here, with its output.
func Print(anchor string) (*Archive, error) {
	out, err := run("otf2-print", anchor)
	if err != nil {
		return nil, err
	}
	a := &Archive{Kinds: map[string]int{}, Enters: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	inEvents := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "=== Events") {
			inEvents = true
			continue
		}
		if !inEvents || line == "" || strings.HasPrefix(line, "Event ") || strings.HasPrefix(line, "---") {
			continue
		}
		if line[0] == ' ' {
			if n := len(a.Records); n > 0 {
				a.Records[n-1].Attrs += " " + strings.TrimSpace(line)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("otf2-print: unexpected line %q", line)
		}
		loc, err1 := strconv.ParseUint(f[1], 10, 64)
		t, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("otf2-print: unexpected line %q", line)
		}
		r := Record{Kind: f[0], Location: loc, Time: t}
		// The rest follows the third field (found field by field: the
		// time 0 of location 0 reads like the location).
		end := 0
		for _, x := range f[:3] {
			end += strings.Index(line[end:], x) + len(x)
		}
		rest := strings.TrimSpace(line[end:])
		r.Attrs = rest
		if (r.Kind == "ENTER" || r.Kind == "LEAVE") && strings.HasPrefix(rest, "Region: \"") {
			s := rest[len("Region: \""):]
			if i := strings.IndexByte(s, '"'); i >= 0 {
				r.Region = s[:i]
			}
		}
		a.Kinds[r.Kind]++
		if r.Kind == "ENTER" {
			a.Enters[r.Region]++
		}
		a.Records = append(a.Records, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	defs, err := run("otf2-print", "-G", anchor)
	if err != nil {
		return nil, err
	}
	a.Defs = string(defs)
	return a, nil
}

func run(name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		// otf2-print reports what it could not read on stderr and may
		// still exit 0.
		return nil, fmt.Errorf("%s %s reported: %s", name, strings.Join(args, " "), s)
	}
	return out, nil
}
