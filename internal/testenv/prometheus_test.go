//go:build integration

package testenv_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/testenv"
)

func TestPrometheusMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := testenv.PrometheusBinary()
	if !errors.Is(err, testenv.ErrMissingPrometheus) || !strings.Contains(err.Error(), "apt-get install prometheus") {
		t.Errorf("PrometheusBinary() error = %v; want ErrMissingPrometheus saying how to install it", err)
	}
}

// TestPrometheusScrapes has a real Prometheus server scrape a target whose
// value the test changes, and reads it back with PromQL.
func TestPrometheusScrapes(t *testing.T) {
	value := make(chan int, 1)
	value <- 7
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := <-value
		value <- v
		fmt.Fprintf(w, "# TYPE test_widgets gauge\ntest_widgets{color=\"blue\"} %d\n", v)
	}))
	defer target.Close()
	p := testenv.NewPrometheus(t, strings.TrimPrefix(target.URL, "http://"))
	for _, want := range []int{7, 9} {
		if want == 9 {
			<-value
			value <- 9
		}
		var got []testenv.Sample
		var err error
		if !poll(30*time.Second, 200*time.Millisecond, func() bool {
			got, err = p.Query(t.Context(), `test_widgets{job="drover"}`)
			return err == nil && len(got) == 1 && got[0].Value == float64(want) && got[0].Labels["color"] == "blue"
		}) {
			targets, _ := p.Targets(t.Context())
			t.Fatalf("test_widgets = %v (%v), want %d; targets:\n%s", got, err, want, targets)
		}
	}
	if _, err := p.Query(t.Context(), "sum("); err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("a bad query: err %v, want Prometheus' parse error", err)
	}
}
