package crds

import (
	"embed"
	"io/fs"
	"slices"
)

// FS holds the CRD manifests, one YAML document per file.
//
//go:embed *.yaml
var FS embed.FS

// Manifests returns each manifest by file name, in name order.
func Manifests() (names []string, data [][]byte, err error) {
	entries, err := fs.Glob(FS, "*.yaml")
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(entries)
	for _, n := range entries {
		b, err := FS.ReadFile(n)
		if err != nil {
			return nil, nil, err
		}
		names, data = append(names, n), append(data, b)
	}
	return names, data, nil
}
