package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOperatorObjectName(t *testing.T) {
	tests := []struct{ appName, resource, want string }{
		{"", "local:///app/wordcount", "wordcount"},
		{"", "/app/word_count", "word-count"},
		{"Word Count", "local:///app/wc", "word-count"},
		{"  --ETL: nightly (v2)--", "/x", "etl-nightly-v2"},
		{"日本", "/x", "drover-application"},
		{"a-very-long-application-name-that-goes-on-and-on-past-the-limit-of-labels", "/x",
			"a-very-long-application-name-that-goes-on-and-on-past-the-limit"},
	}
	var got, want []string
	for _, tt := range tests {
		got, want = append(got, objectName(tt.appName, tt.resource)), append(want, tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objectName (-want +got):\n%s", diff)
	}
}
