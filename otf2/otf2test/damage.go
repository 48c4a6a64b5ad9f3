package otf2test

import (
	"bytes"
	"fmt"
	"os"
)

// DamageAnchor changes three bytes of the creator string ("Score-P …") of
// the anchor file at path, the damage that keeps libotf2 reading the file
// for ~45 s before it gives up (found by otf2.FuzzImport).
func DamageAnchor(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i := bytes.Index(b, []byte("Score-P"))
	if i < 0 {
		return fmt.Errorf("%s names no Score-P creator", path)
	}
	copy(b[i+2:], "\x7f\x00\x00")
	return os.WriteFile(path, b, 0o644)
}
