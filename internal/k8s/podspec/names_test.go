package podspec

import "testing"

func TestNamesAreDNSLabels(t *testing.T) {
	for in, want := range map[string]string{
		"Word Count (nightly)": "word-count-nightly",
		"--a__b--":             "a-b",
		"ÄÖÜ":                  "",
		"x.y.z":                "x-y-z",
	} {
		if got := sanitize(in, 63); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sanitize("abc-def", 4); got != "abc" {
		t.Errorf("a truncated name ends in '-': %q", got)
	}
	if got := appNameLabel("ÄÖÜ"); got != "drover" {
		t.Errorf("appNameLabel of an unusable name = %q", got)
	}
	want(t, "config map", ConfigMapName("drover-0123456789abcdef"), "drover-exec-0123456789abcdef-conf-map")
	want(t, "config map of a Spark id", ConfigMapName("spark-ABC"), "drover-exec-abc-conf-map")
}

func TestEscapePropertyHash(t *testing.T) {
	if got := escapeProperty("#a!", true); got != `\#a!` {
		t.Errorf("escapeProperty(#a!) = %q, want \\#a!", got)
	}
}

func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
