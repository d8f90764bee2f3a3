package ui

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/events"
)

// TestAttemptID: the API names a restarted driver's attempt as Spark's
// attemptId, and a driver that cannot restart's attempt has none.
func TestAttemptID(t *testing.T) {
	for _, tc := range []struct {
		name, attempt string
		want          any
	}{
		{"no attempts", "", nil},
		{"attempt 2", "2", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := appstate.New(appstate.DefaultOptions())
			s.Handle(&events.AppStart{AppID: "drover-1", AttemptID: tc.attempt})
			u := New(s, Options{AttemptID: tc.attempt})
			for _, path := range []string{"/api/v1/applications", "/api/v1/applications/drover-1"} {
				v := getJSON(t, u, path)
				if list, ok := v.([]any); ok {
					v = list[0]
				}
				attempt := v.(map[string]any)["attempts"].([]any)[0].(map[string]any)
				if diff := cmp.Diff(tc.want, attempt["attemptId"]); diff != "" {
					t.Errorf("GET %s: attemptId (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}
