package records

import (
	"os"
	"testing"
)

// FuzzRecover damages a killed process's spill file (its header's JSON,
// a slot's sequence number, commit or thread, the records): the program
// wrote into the same address space, so a wild store of a buggy program
// can reach it. Recover must not panic, and what it appends must read.
func FuzzRecover(f *testing.F) {
	f.Add(uint32(12), []byte(`{"Trace":"x"`))
	f.Add(uint32(12), []byte(`{"Chunk":9223372036854775807,"Slots":1,"Trace":"`))
	f.Add(uint32(SpillHeaderSize+8), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add(uint32(SpillHeaderSize+SlotHeader+3), []byte{0xff})
	f.Fuzz(func(t *testing.T, off uint32, data []byte) {
		tracePath := killedTrace(t, t.TempDir(), cheapCalls(5), []byte{1, 2, 3})
		spill, put := spillFor(t, tracePath, 3)
		put(0, 5, 0, cheapCallsAt(4, 1<<40+10000))
		put(1, 6, 1, cheapCallsAt(3, 1<<40+20000))
		b, err := os.ReadFile(spill)
		if err != nil {
			t.Fatal(err)
		}
		copy(b[int(off)%len(b):], data)
		if err := os.WriteFile(spill, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Recover(spill); err != nil {
			return
		}
		readRecovered(t, tracePath)
	})
}
