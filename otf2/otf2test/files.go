package otf2test

import (
	"io/fs"
	"path/filepath"
)

// Files lists the files of the archive in dir (the anchor and every file
// below it), as paths relative to dir beginning with "/", for tests that
// compare two archives file by file.
func Files(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p[len(dir):])
		}
		return err
	})
	return files, err
}
