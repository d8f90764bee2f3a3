// Package browser drives a headless Chromium (Debian's chromium package)
// through chromedp for tests of the web UI: it reads pages' text, follows
// links and saves screenshots as test artifacts. Without Chromium a test
// skips with the command that installs it, except under CI=true, where it
// fails.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover-project/drover/internal/envvar"
	"github.com/drover-project/drover/internal/testenv"
)

// timeout bounds each step, so a page that never comes fails the test.
const timeout = 20 * time.Second

// Page is one browser tab.
type Page struct {
	t    testing.TB
	ctx  context.Context
	dir  string
	shot int
}

// Path finds Chromium: $DROVER_CHROMIUM, else chromium on the PATH. It
// skips t when there is none, or fails it under CI=true.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(envvar.Chromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium for the browser test: apt-get install chromium (or run hack/install-test-packages.sh as root), or set DROVER_CHROMIUM"
	if testenv.InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// ArtifactDir is where a test leaves files for people to look at:
// $DROVER_ARTIFACTS/<test name> when set, else the test's temporary
// directory.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv(envvar.Artifacts)
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// New starts a headless Chromium for t, stopped when t ends; screenshots
// go to ArtifactDir.
func New(t testing.TB) *Page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Path(t)), chromedp.WindowSize(1400, 1000),
		chromedp.NoSandbox) // CI runs as root, where Chromium's sandbox refuses to start
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser, which lives as long as ctx.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	p := &Page{t: t, ctx: ctx, dir: ArtifactDir(t)}
	t.Logf("screenshots in %s", p.dir)
	return p
}

// Do runs actions, each step within the time limit.
func (p *Page) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// Open loads url and waits for its <main> heading.
func (p *Page) Open(url string) {
	p.t.Helper()
	p.Do("opening "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("main h1")))
}

// Run runs one action that returns a value.
func Run[T any](p *Page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// Text is the visible text of the first element sel (CSS) matches.
func (p *Page) Text(sel string) string {
	p.t.Helper()
	s, err := Run(p, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// Attr is an attribute of the first element sel matches, and whether it
// is there.
func (p *Page) Attr(sel, name string) (string, bool) {
	r, err := Run(p, chromedp.AttributeValue(chromedp.CSS(sel), name))
	return r.Value, err == nil && r.Exists
}

// Location is the current URL.
func (p *Page) Location() string {
	loc, _ := Run(p, chromedp.Location())
	return loc
}

// Expect checks that the text of <main> has every one of want.
func (p *Page) Expect(where string, want ...string) {
	p.t.Helper()
	text := p.Text("main")
	for _, w := range want {
		if !strings.Contains(text, w) {
			p.t.Errorf("%s: missing %q in the page's text:\n%s", where, w, text)
		}
	}
}

// Follow clicks the nav bar's link to path and checks that it led there
// and is highlighted.
func (p *Page) Follow(link, path string) {
	p.t.Helper()
	sel := chromedp.CSS(`nav a[href="` + path + `"]`)
	p.Do("following "+link, chromedp.Click(sel), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if loc := p.Location(); !strings.HasSuffix(loc, path) {
		p.t.Fatalf("the %s link led to %q, want …%s", link, loc, path)
	}
	if cls, _ := p.Attr(`nav a[href="`+path+`"]`, "class"); cls != "active" {
		p.t.Errorf("the %s link is not highlighted on its page", link)
	}
}

// Screenshot saves the whole page as NN-name.png in the artifact
// directory.
func (p *Page) Screenshot(name string) {
	p.t.Helper()
	png, err := Run(p, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	p.shot++
	if err := os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("%02d-%s.png", p.shot, name)), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}
