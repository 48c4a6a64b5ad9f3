package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
)

// TestViewUsage: a bad command line is exit 2, in dtpa as in dtpa-view.
func TestViewUsage(t *testing.T) {
	for _, args := range [][]string{{"view"}, {"view", "--port", "70000", "app"}, {"view", "app", "x"}, {"view", "a", "1", "2"}} {
		if _, errOut, c := dtpa(t, args...); c != exitUsage {
			t.Errorf("dtpa %s: exit %d, stderr %q", strings.Join(args, " "), c, errOut)
		}
	}
}

// TestViewServedByDtpaView: dtpa view runs bin/dtpa-view in its place,
// which serves the report until SIGINT and exits 0; the dtpa binary has
// no web server in it.
func TestViewServedByDtpaView(t *testing.T) {
	bin := filepath.Join(testenv.Root(), "bin")
	for _, name := range []string{"dtpa", "dtpa-view"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			testenv.Missing(t, "bin/"+name+" missing: run make build")
		}
	}
	if syms, err := exec.Command("go", "tool", "nm", filepath.Join(bin, "dtpa")).Output(); err == nil && strings.Contains(string(syms), "net/http.(*Server)") {
		t.Error("bin/dtpa links net/http's server: the web server belongs in dtpa-view only")
	}
	dir := lateSender(t)
	cmd := exec.Command(filepath.Join(bin, "dtpa"), "view", "--dir", dir, "app")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var url string
	select {
	case line := <-lines:
		url = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
		if url == "" {
			t.Fatalf("first line %q names no address; stderr %q", line, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no address printed in 60 s; stderr %q", errOut.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `id="dtpa-live"`) {
		t.Errorf("GET /: %d %.200q", resp.StatusCode, page)
	}
	// The process dtpa started is the server now: the signal reaches it.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(strings.Join(rest, "\n"), "dtpa: stopped") {
		t.Errorf("after SIGINT: %v, stdout %q, stderr %q", err, rest, errOut.String())
	}
}
