//go:build integration

package history

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/drover-project/drover/internal/testenv/browser"
)

// In a browser, the Executors page of a finished application links
// executor 1's kept log, and the link shows it as text.
func TestKeptLogsInABrowser(t *testing.T) {
	srv, _ := keptHistory(t)
	p := browser.New(t)
	p.Open(srv.URL + "/history/drover-1/executors/")
	p.Screenshot("kept-log-links")
	link := `a[href="/history/drover-1/logs/executor/1"]`
	p.Do("following executor 1's log link", chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS("body pre")))
	if loc := p.Location(); !strings.HasSuffix(loc, "/history/drover-1/logs/executor/1") {
		t.Fatalf("the log link led to %s", loc)
	}
	if text := p.Text("body pre"); !strings.Contains(text, "MARKER: the last line executor 1 wrote") {
		t.Errorf("the kept log's page ends with %q", text[max(0, len(text)-200):])
	}
}
