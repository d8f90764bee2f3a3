package funcs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func noop(context.Context, Task, []byte) ([]byte, error) { return nil, nil }

// The cases run in order: registration is process-wide and Freeze is final.
func TestRegistration(t *testing.T) {
	if err := Register("a", noop); err != nil {
		t.Fatal(err)
	}
	if _, ok := Lookup("a"); !ok {
		t.Fatal("registered function not found")
	}
	for _, tc := range []struct {
		name string
		fn   Func
		want string
	}{
		{"a", noop, "already registered"},
		{"", noop, "empty name"},
		{"b", nil, "nil function"},
	} {
		if err := Register(tc.name, tc.fn); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
	Freeze()
	if err := Register("late", noop); !errors.Is(err, ErrFrozen) {
		t.Errorf("Register after Freeze = %v, want ErrFrozen", err)
	}
	if _, ok := Lookup("late"); ok {
		t.Error("a function registered after Freeze is visible")
	}
}
