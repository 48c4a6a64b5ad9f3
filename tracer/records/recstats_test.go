package records

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
)

// TestRecordStats prints, for the deferred traces named by DT_RECSTATS
// (space-separated paths), the raw record bytes by attribute set and how
// many records' exit−entry fit the header's u32 of clock ticks (no RawLong): the figures
// that say which fields a smaller record layout should shrink.
func TestRecordStats(t *testing.T) {
	paths := strings.Fields(os.Getenv("DT_RECSTATS"))
	if len(paths) == 0 {
		t.Skip("DT_RECSTATS not set")
	}
	type kind struct{ n, bytes, attrBytes int }
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := traceformat.NewFrameScanner(f, path)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[traceformat.Attr]*kind{}
		var n, total, fit32 int
		for {
			fr, err := sc.Next()
			if err != nil {
				break
			}
			if fr.Kind != traceformat.KindRecords {
				continue
			}
			_, recs, err := ParsePrefix(fr.Payload())
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+HeaderSize <= len(recs); {
				h, attr, need := record(recs, off)
				if need < 0 {
					break
				}
				k := kinds[attr]
				if k == nil {
					k = &kind{}
					kinds[attr] = k
				}
				k.n++
				k.bytes += len(h) + need
				k.attrBytes += need
				n++
				total += len(h) + need
				if attr&RawLong == 0 {
					fit32++
				}
				off += len(h) + need
			}
		}
		f.Close()
		var attrs []traceformat.Attr
		for a := range kinds {
			attrs = append(attrs, a)
		}
		sort.Slice(attrs, func(i, j int) bool { return kinds[attrs[i]].bytes > kinds[attrs[j]].bytes })
		fmt.Printf("%s: %d records, %d bytes, %.1f B/record, exit-entry < 2^32 ticks: %.4f %%\n",
			path, n, total, float64(total)/float64(max(n, 1)), 100*float64(fit32)/float64(max(n, 1)))
		for _, a := range attrs {
			k := kinds[a]
			fmt.Printf("  attr %#06x: %6.2f %% of records, %6.2f %% of bytes, %5.1f B/record (%4.1f attribute bytes)\n",
				uint16(a), 100*float64(k.n)/float64(n), 100*float64(k.bytes)/float64(total),
				float64(k.bytes)/float64(k.n), float64(k.attrBytes)/float64(k.n))
		}
	}
}
