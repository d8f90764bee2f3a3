package eventlog

import (
	"strings"
	"testing"
)

// The history server serves only application ids that are safe as they
// are in a URL path, a link and a header.
func TestCheckAppID(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"drover-0123456789abcdef", true},
		{"spark-application-1700000000000", true},
		{"local-1700000000000", true},
		{"app-20261124120000-0001", true},
		{"App_1.2", true},
		{strings.Repeat("a", 255), true},
		{"", false},
		{strings.Repeat("a", 256), false},
		{`"><img src=x onerror=alert(1)>`, false},
		{"app 1", false},
		{"app/1", false},
		{"app%2F1", false},
		{"app?x=1", false},
		{"app#1", false},
		{"app\n1", false},
		{"applicaçion", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"-x", false},
		{"_x", false},
	} {
		if err := CheckAppID(c.id); (err == nil) != c.ok {
			t.Errorf("CheckAppID(%q) = %v, want ok %v", c.id, err, c.ok)
		}
	}
}
