package progress

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/scheduler"
)

// Bar renders the stages as Spark's console progress bar, in width
// columns: [Stage 1:=====>      (12 + 4) / 100] for each stage, side by
// side.
func Bar(stages []scheduler.StageProgress, width int) string {
	if len(stages) == 0 {
		return ""
	}
	per := width / len(stages)
	var b strings.Builder
	for _, s := range stages {
		header := fmt.Sprintf("[Stage %d:", s.StageID)
		if s.Attempt > 0 {
			header = fmt.Sprintf("[Stage %d (attempt %d):", s.StageID, s.Attempt)
		}
		tailer := fmt.Sprintf("(%d + %d) / %d]", s.Done, s.Running, s.Total)
		w := per - len(header) - len(tailer)
		b.WriteString(header)
		if w > 0 && s.Total > 0 {
			done := w * s.Done / s.Total
			b.WriteString(strings.Repeat("=", done))
			if done < w {
				b.WriteByte('>')
				b.WriteString(strings.Repeat(" ", w-done-1))
			}
		}
		b.WriteString(tailer)
	}
	return b.String()
}

// Line renders the stages as one plain line.
func Line(stages []scheduler.StageProgress) string {
	parts := make([]string, len(stages))
	for i, s := range stages {
		parts[i] = fmt.Sprintf("stage %d: %d/%d tasks done, %d running", s.StageID, s.Done, s.Total, s.Running)
	}
	return strings.Join(parts, "; ")
}

// Reporter prints the progress of the stages Source reports until its
// context ends.
type Reporter struct {
	W        io.Writer
	Terminal bool
	Width    int           // columns of the terminal; 80 when 0
	Interval time.Duration // between plain lines
	Source   func() []scheduler.StageProgress
	// Waiting, when set, says what keeps executors back (a queue, a
	// quota); plain lines end with it.
	Waiting func() string
	Clock   clock.WithTicker
}

// Spark redraws every 200 ms and shows only stages older than 500 ms, so
// short stages do not flicker.
const (
	redraw = 200 * time.Millisecond
	minAge = 500 * time.Millisecond
)

// Run reports until ctx is done, then clears its bar.
func (r *Reporter) Run(ctx context.Context) {
	c := r.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	width := r.Width
	if width == 0 {
		width = 80
	}
	every := redraw
	if !r.Terminal {
		every = r.Interval
	}
	t := c.NewTicker(every)
	defer t.Stop()
	firstSeen := map[[2]int]time.Time{}
	shown := ""
	for {
		select {
		case <-ctx.Done():
			if shown != "" {
				fmt.Fprint(r.W, "\r"+strings.Repeat(" ", len(shown))+"\r")
			}
			return
		case <-t.C():
		}
		stages := visible(r.Source(), firstSeen, c.Now())
		if !r.Terminal {
			if len(stages) > 0 {
				line := Line(stages)
				if r.Waiting != nil {
					if w := r.Waiting(); w != "" {
						line += "; executors: " + w
					}
				}
				fmt.Fprintln(r.W, line)
			}
			continue
		}
		bar := Bar(stages, width)
		if bar == shown {
			continue
		}
		pad := max(0, len(shown)-len(bar))
		fmt.Fprint(r.W, "\r"+bar+strings.Repeat(" ", pad))
		if bar == "" && pad > 0 {
			fmt.Fprint(r.W, "\r")
		}
		shown = bar
	}
}

// visible keeps the stages seen for at least minAge, and forgets those
// that ended.
func visible(stages []scheduler.StageProgress, firstSeen map[[2]int]time.Time, now time.Time) []scheduler.StageProgress {
	active := make(map[[2]int]bool, len(stages))
	var out []scheduler.StageProgress
	for _, s := range stages {
		k := [2]int{s.StageID, s.Attempt}
		active[k] = true
		first, ok := firstSeen[k]
		if !ok {
			firstSeen[k] = now
			continue
		}
		if now.Sub(first) >= minAge {
			out = append(out, s)
		}
	}
	for k := range firstSeen {
		if !active[k] {
			delete(firstSeen, k)
		}
	}
	return out
}
