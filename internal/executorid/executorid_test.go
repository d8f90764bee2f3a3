package executorid

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    ID
		wantErr bool
	}{
		{in: "1", want: 1},
		{in: "5000", want: 5000},
		{in: "driver", want: Driver},
		{in: "0", wantErr: true},
		{in: "-3", wantErr: true},
		{in: "exec-1", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("Parse(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("Parse(%q).String() = %q, want the input back", tc.in, got.String())
		}
	}
}

func TestStrings(t *testing.T) {
	if diff := cmp.Diff([]string{"driver", "2", "10"}, Strings([]ID{Driver, 2, 10})); diff != "" {
		t.Errorf("Strings (-want +got):\n%s", diff)
	}
}
