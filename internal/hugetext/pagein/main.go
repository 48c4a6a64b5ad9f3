// Command pagein reads binaries back into the page cache in 2 MB folios
// (hugetext.PageIn): make build runs it on the commands it built, whose
// pages the linker left cached in 4 KB.
//
//	go run ./internal/hugetext/pagein FILE...
package main

import (
	"fmt"
	"os"

	"github.com/dtpa/dtpa/internal/hugetext"
)

func main() {
	for _, p := range os.Args[1:] {
		if err := hugetext.PageIn(p); err != nil {
			// The binaries work as they are: say so and go on.
			fmt.Fprintf(os.Stderr, "pagein: %s: %v\n", p, err)
		}
	}
}
