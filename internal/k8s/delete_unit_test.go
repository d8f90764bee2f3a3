package k8s

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDeleteRetryable: stop asks again after the errors of a delete that
// outlasted the API server (a timeout, a reset stream, an overloaded
// server), never after one that asking again cannot change.
func TestDeleteRetryable(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	testCases := map[string]struct {
		err  error
		want bool
	}{
		"server timeout (504)": {apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 0), true},
		"server timeout":       {apierrors.NewServerTimeout(pods, "deletecollection", 1), true},
		"reset stream":         {fmt.Errorf("delete: %w", errors.New("stream error: stream ID 20011; INTERNAL_ERROR; received from peer")), true},
		"too many requests":    {apierrors.NewTooManyRequests("slow down", 1), true},
		"forbidden":            {apierrors.NewForbidden(pods, "", errors.New("no RBAC")), false},
		"not found":            {apierrors.NewNotFound(pods, "x"), false},
		"bad request":          {apierrors.NewBadRequest("invalid selector"), false},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := deleteRetryable(tc.err); got != tc.want {
				t.Errorf("deleteRetryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
