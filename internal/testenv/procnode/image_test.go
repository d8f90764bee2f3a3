package procnode

import "testing"

func TestUnpullableImage(t *testing.T) {
	for image, want := range map[string]bool{
		"registry.invalid/app:1":        true,
		"registry.invalid:5000/app:1":   true,
		"invalid/app":                   false, // Docker Hub's user "invalid"
		"drover-test:latest":            false,
		"docker.io/library/busybox":     false,
		"localhost:5000/app":            false,
		"example.com/invalid/app":       false,
		"my.registry.invalid.com/app:1": false,
	} {
		if got := UnpullableImage(image); got != want {
			t.Errorf("UnpullableImage(%q) = %v, want %v", image, got, want)
		}
	}
}
