package otf2

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// frameFile builds an event file of 64-byte chunks by hand. Chunk 1:
// three events, each a timestamp (9 bytes) and a record of 3 (5 bytes),
// from byte 18 to 60, then end of chunk and padding. Chunk 2 (from 64):
// one such event (82–96), an attribute list (96–100), an event whose
// length takes nine bytes (100–112), end of file (112) and the byte
// libotf2 writes after it (113).
func frameFile() []byte {
	header := func(order byte) []byte {
		return append([]byte{frameChunkHeader, order}, make([]byte, 16)...)
	}
	event := []byte{frameTimestamp, 1, 2, 3, 4, 5, 6, 7, 8, 10, 3, 7, 7, 7}
	var b []byte
	b = append(b, header(frameLittle)...)
	for range 3 {
		b = append(b, event...)
	}
	b = append(b, frameEndOfChunk)
	b = append(b, make([]byte, 64-len(b))...)
	b = append(b, header(frameLittle)...)
	b = append(b, event...)
	b = append(b, frameAttributes, 2, 9, 9)
	b = append(b, 11, 0xff)
	b = binary.LittleEndian.AppendUint64(b, 2)
	b = append(b, 5, 5, frameEndOfFile, 0x01)
	return b
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.evt")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkFrames on a file built by hand, cut and damaged where the expected
// record counts and offsets can be told by hand: libotf2 may read exactly
// the records that lie wholly within the file.
func TestCheckFrames(t *testing.T) {
	whole := frameFile()
	if len(whole) != 114 {
		t.Fatalf("the built file has %d bytes, want 114", len(whole))
	}
	for _, c := range []struct {
		name    string
		b       func([]byte) []byte
		whole   bool
		records uint64
		at      int64
		why     string
	}{
		{"whole", func(b []byte) []byte { return b }, true, 0, 0, ""},
		{"without the byte after the end", func(b []byte) []byte { return b[:113] }, true, 0, 0, ""},
		{"cut before the end-of-file record", func(b []byte) []byte { return b[:112] }, false, 5, 112,
			"the file ends where an end-of-file record should be"},
		{"cut inside the long record", func(b []byte) []byte { return b[:111] }, false, 4, 100,
			"a record of 2 bytes there runs past the end of the file"},
		{"cut inside the long length", func(b []byte) []byte { return b[:105] }, false, 4, 100,
			"the file ends where a record's length should be"},
		{"cut inside a timestamp", func(b []byte) []byte { return b[:85] }, false, 3, 82,
			"the file ends where a timestamp should be"},
		{"cut inside the second header", func(b []byte) []byte { return b[:70] }, false, 3, 64,
			"the file ends where the chunk's header should be"},
		{"cut where the first chunk ends", func(b []byte) []byte { return b[:64] }, false, 3, 64,
			"its last chunk ends without an end-of-file record"},
		{"cut in the first chunk's padding", func(b []byte) []byte { return b[:62] }, false, 3, 62,
			"its last chunk ends without an end-of-file record"},
		{"cut inside the first chunk", func(b []byte) []byte { return b[:40] }, false, 1, 32,
			"the file ends where a timestamp should be"},
		{"empty", func(b []byte) []byte { return b[:0] }, false, 0, 0, "the file is empty"},
		{"a length leading past the end", func(b []byte) []byte { b[92] = 200; return b }, false, 3, 91,
			"a record of 200 bytes there runs past the end of the file"},
		{"big-endian second chunk", func(b []byte) []byte { b[65] = frameBig; return b }, false, 4, 100,
			"a record of 144115188075855872 bytes there runs past the end of the file"},
		{"no header", func(b []byte) []byte { b[64] = 7; return b }, false, 3, 64,
			"no chunk header where a chunk begins"},
		{"a bad byte order mark", func(b []byte) []byte { b[65] = 7; return b }, false, 3, 65,
			"the chunk header's byte order mark is 0x07"},
		// Damage inside a chunk libotf2 holds whole is its own to find.
		{"a length leading past the first chunk", func(b []byte) []byte { b[42] = 60; return b }, true, 0, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, c.b(append([]byte(nil), whole...)))
			fr, err := checkFrames(p, 64, true)
			if err != nil {
				t.Fatal(err)
			}
			if fr.Whole != c.whole {
				t.Fatalf("whole %v, want %v (%v)", fr.Whole, c.whole, fr)
			}
			if c.whole {
				return
			}
			if fr.Records != c.records || fr.At != c.at || !strings.HasPrefix(fr.Why, c.why) {
				t.Errorf("%d records, %v; want %d records, byte %d: %s", fr.Records, fr, c.records, c.at, c.why)
			}
		})
	}
	// The same framing read as definitions: record types 5 and 6 are
	// definitions there, with a length like any other.
	defs := []byte{frameChunkHeader, frameLittle}
	defs = append(defs, make([]byte, 16)...)
	defs = append(defs, frameTimestamp, 1, 0x33, 16, 2, 1, 1, frameEndOfFile, 1)
	p := writeTemp(t, defs)
	if fr, err := checkFrames(p, 64, false); err != nil || !fr.Whole {
		t.Errorf("definitions: %v %v; want whole", fr, err)
	}
	if fr, err := checkFrames(p, 64, true); err != nil || fr.Whole {
		t.Errorf("definitions read as events: %v %v; want damaged", fr, err)
	}
}

// Every file of both Score-P archives is whole; cut anywhere before its
// end-of-file record it is not, and the records libotf2 may read grow
// with the cut.
func TestCheckFramesCuts(t *testing.T) {
	for _, name := range []string{"scorep_ls4", "scorep_lammps_melt"} {
		root := archivePath(t, name)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) == ".otf2" {
				return err
			}
			events := filepath.Ext(p) == ".evt"
			chunk := uint64(1 << 18)
			if events {
				chunk = 1 << 20
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.HasSuffix(b, []byte{frameEndOfFile, 0x01}) {
				t.Errorf("%s does not end with an end-of-file record", p)
			}
			step := max(1, len(b)/2000)
			prev := uint64(0)
			for cut := 0; cut <= len(b); cut += step {
				if len(b)-cut < step {
					cut = len(b) - 2 // the last two: cut right before the end-of-file record, and whole
				}
				fr, err := checkFrames(writeTemp(t, b[:cut]), chunk, events)
				if err != nil {
					return err
				}
				if want := cut >= len(b)-1; fr.Whole != want {
					t.Fatalf("%s cut at %d of %d: whole %v, want %v (%v)", p, cut, len(b), fr.Whole, want, fr)
				}
				if !fr.Whole {
					if fr.Records < prev || fr.At > int64(cut) {
						t.Fatalf("%s cut at %d: %d records at %v, after %d records at a shorter cut", p, cut, fr.Records, fr, prev)
					}
					prev = fr.Records
				}
				if cut >= len(b)-2 {
					break
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Import of an archive one of whose files is cut: the global definitions
// are an error, a location's definitions leave its rank out, its events
// are imported up to the cut; each says which file and byte.
func TestImportCutArchive(t *testing.T) {
	full := importArchive(t, archivePath(t, "scorep_ls4"))
	var rank2 uint64 // location 2's events, as otf2-print lists them
	for _, e := range printedEvents(t, filepath.Join(archivePath(t, "scorep_ls4"), "traces.otf2")) {
		if e.loc == 2 {
			rank2++
		}
	}
	for _, c := range []struct {
		file string
		cut  func(int64) int64
	}{
		{"traces.def", func(n int64) int64 { return n / 3 }}, // FuzzImport's seed that hung libotf2
		{"traces.def", func(n int64) int64 { return n - 2 }},
		{"traces/1.def", func(n int64) int64 { return n / 2 }},
		{"traces/1.def", func(n int64) int64 { return 18 }},
		{"traces/2.evt", func(n int64) int64 { return n / 3 }},
		{"traces/2.evt", func(n int64) int64 { return n - 2 }},
		{"traces/2.evt", func(n int64) int64 { return 5 }},
	} {
		dir := copyArchive(t, "scorep_ls4")
		p := filepath.Join(dir, c.file)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		cut := c.cut(st.Size())
		if err := os.Truncate(p, cut); err != nil {
			t.Fatal(err)
		}
		var warns []string
		stats, err := Import(context.Background(), dir, t.TempDir(), "app", func(s string) { warns = append(warns, s) })
		switch {
		case c.file == "traces.def":
			if err == nil || !strings.Contains(err.Error(), p+": the global definitions are damaged at byte") {
				t.Errorf("%s cut at %d: error %v; want one naming it and the byte", c.file, cut, err)
			}
		case strings.HasSuffix(c.file, ".def"):
			if err != nil || !hasWarning(warns, p+" is damaged at byte", "rank 1", "not imported") || len(stats.Files) != 3 {
				t.Errorf("%s cut at %d: %v, files %v, warnings %q; want rank 1 left out, saying why", c.file, cut, err, stats.Files, warns)
			}
		default:
			fr, ferr := checkFrames(p, 1<<20, true)
			if ferr != nil {
				t.Fatal(ferr)
			}
			want := full.stats.Events - rank2 + fr.Records
			if err != nil || !hasWarning(warns, p, "rank 2", "damaged at byte") || stats.Events != want {
				t.Errorf("%s cut at %d: %v, %d events, warnings %q; want %d events, rank 2's up to the cut, saying where", c.file, cut, err, stats.Events, warns, want)
			}
		}
	}
}

// poisonSource makes every large allocation look like an OTF2 chunk
// that holds a header and then ends: what made libotf2 read a cut file's
// chunks again and again, forever, where its memory happened to hold
// that (libotf2 reads chunks into such allocations and parses them to
// their end, past what the file held).
const poisonSource = `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
void *malloc(size_t n) {
    static void *(*next)(size_t);
    if (!next) next = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    uint8_t *p = next(n);
    if (p && n >= 65536) { memset(p, 0, n); p[0] = 3; p[1] = 0x42; }
    return p;
}
`

// TestImportCutArchive again, with memory that makes libotf2 loop when
// it reads past a file's end: the import must never let it.
func TestImportCutArchivePoisoned(t *testing.T) {
	if os.Getenv("LD_PRELOAD") != "" {
		t.Skip("already preloading")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	dir := t.TempDir()
	src, so := filepath.Join(dir, "poison.c"), filepath.Join(dir, "poison.so")
	if err := os.WriteFile(src, []byte(poisonSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		t.Skipf("cannot build the allocator: %v: %s", err, out)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestImportCutArchive$", "-test.count", "1", "-test.timeout", "120s")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+so)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "test timed out") {
		t.Fatalf("libotf2 did not finish reading the cut archives in 120 s: it read past a file's end, into memory that looks like chunks: %v", err)
	}
	if err != nil {
		t.Fatalf("the import of cut archives with libotf2's chunks allocated as stale chunks: %v\n%s", err, lastLines(string(out), 30))
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
