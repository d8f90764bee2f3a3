package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// parseCase is a case of TestParseBytes or TestParseDuration.
type parseCase[U any] struct {
	in      string
	unit    U
	want    U
	wantErr string // substring of the error; "" means success
}

// runParseCases runs the cases of TestParseBytes and TestParseDuration:
// name is the function parse is, for the messages.
func runParseCases[U any](t *testing.T, name string, parse func(string, U) (U, error), testCases map[string]parseCase[U]) {
	t.Helper()
	for caseName, tc := range testCases {
		t.Run(caseName, func(t *testing.T) {
			got, err := parse(tc.in, tc.unit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s(%q) = %v, %v; want error containing %q", name, tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s(%q): %v", name, tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s(%q) (-want,+got):\n%s", name, tc.in, diff)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	testCases := map[string]parseCase[int64]{
		"gibibytes":                  {in: "4g", unit: MiB, want: 4 << 30},
		"mebibytes":                  {in: "512m", unit: MiB, want: 512 << 20},
		"kibibytes":                  {in: "1k", unit: MiB, want: 1024},
		"bytes":                      {in: "100b", unit: MiB, want: 100},
		"tebibytes":                  {in: "2t", unit: B, want: 2 << 40},
		"pebibytes":                  {in: "1p", unit: B, want: 1 << 50},
		"bare number in MiB":         {in: "1024", unit: MiB, want: 1 << 30},
		"bare number in bytes":       {in: "1024", unit: B, want: 1024},
		"bare number in KiB":         {in: "48", unit: KiB, want: 48 << 10},
		"zero":                       {in: "0", unit: MiB, want: 0},
		"upper case":                 {in: "4G", unit: MiB, want: 4 << 30},
		"b suffix":                   {in: "4gb", unit: MiB, want: 4 << 30},
		"mixed case b suffix":        {in: "4Gb", unit: MiB, want: 4 << 30},
		"surrounding spaces":         {in: "  8m\t", unit: MiB, want: 8 << 20},
		"largest":                    {in: "9223372036854775807b", unit: MiB, want: math.MaxInt64},
		"largest in a unit":          {in: "8191p", unit: B, want: 8191 << 50},
		"double unit":                {in: "4gg", unit: MiB, wantErr: `invalid size "4gg": unknown unit "gg"`},
		"negative":                   {in: "-1", unit: MiB, wantErr: `invalid size "-1": negative values are not allowed`},
		"fractional":                 {in: "1.5g", unit: MiB, wantErr: `invalid size "1.5g": fractional values are not supported`},
		"empty":                      {in: "", unit: MiB, wantErr: `invalid size "": empty value`},
		"blank":                      {in: " ", unit: MiB, wantErr: `invalid size " ": empty value`},
		"letters":                    {in: "abc", unit: MiB, wantErr: `invalid size "abc": invalid syntax`},
		"unit only":                  {in: "g", unit: MiB, wantErr: `invalid size "g": invalid syntax`},
		"plus sign":                  {in: "+4g", unit: MiB, wantErr: `invalid size "+4g": invalid syntax`},
		"space before unit":          {in: "4 g", unit: MiB, wantErr: `invalid size "4 g": invalid syntax`},
		"trailing dot":               {in: "4.", unit: MiB, wantErr: `invalid size "4.": invalid syntax`},
		"exponent":                   {in: "1e3", unit: MiB, wantErr: `invalid size "1e3": invalid syntax`},
		"overflow of the number":     {in: "99999999999999999999", unit: B, wantErr: `invalid size "99999999999999999999": the value is too large`},
		"overflow through the unit":  {in: "8192p", unit: B, wantErr: `invalid size "8192p": the value is too large`},
		"overflow through default":   {in: "9007199254740992", unit: MiB, wantErr: "too large"},
		"time unit is not a size":    {in: "10s", unit: MiB, wantErr: `unknown unit "s"`},
		"go style unit is not Spark": {in: "4GiB", unit: MiB, wantErr: `unknown unit "gib"`},
	}
	runParseCases(t, "ParseBytes", ParseBytes, testCases)
}

func TestParseDuration(t *testing.T) {
	testCases := map[string]parseCase[time.Duration]{
		"seconds":                 {in: "30s", unit: time.Second, want: 30 * time.Second},
		"milliseconds":            {in: "100ms", unit: time.Second, want: 100 * time.Millisecond},
		"microseconds":            {in: "250us", unit: time.Second, want: 250 * time.Microsecond},
		"minutes":                 {in: "5m", unit: time.Second, want: 5 * time.Minute},
		"minutes long form":       {in: "5min", unit: time.Second, want: 5 * time.Minute},
		"hours":                   {in: "2h", unit: time.Second, want: 2 * time.Hour},
		"days":                    {in: "1d", unit: time.Second, want: 24 * time.Hour},
		"bare number in seconds":  {in: "120", unit: time.Second, want: 120 * time.Second},
		"bare number in ms":       {in: "10000", unit: time.Millisecond, want: 10 * time.Second},
		"zero":                    {in: "0", unit: time.Second, want: 0},
		"upper case":              {in: "30S", unit: time.Second, want: 30 * time.Second},
		"surrounding spaces":      {in: " 1h ", unit: time.Second, want: time.Hour},
		"largest days":            {in: "106751d", unit: time.Second, want: 106751 * 24 * time.Hour},
		"negative":                {in: "-1", unit: time.Second, wantErr: `invalid duration "-1": negative values are not allowed`},
		"negative with unit":      {in: "-5s", unit: time.Second, wantErr: "negative values are not allowed"},
		"fractional":              {in: "1.5s", unit: time.Second, wantErr: "fractional values are not supported"},
		"empty":                   {in: "", unit: time.Second, wantErr: `invalid duration "": empty value`},
		"letters":                 {in: "abc", unit: time.Second, wantErr: `invalid duration "abc": invalid syntax`},
		"unknown unit":            {in: "3w", unit: time.Second, wantErr: `unknown unit "w"`},
		"go compound form":        {in: "1h30m", unit: time.Second, wantErr: `invalid duration "1h30m": invalid syntax`},
		"size unit":               {in: "4g", unit: time.Second, wantErr: `unknown unit "g"`},
		"overflow of the number":  {in: "99999999999999999999", unit: time.Second, wantErr: "too large"},
		"overflow through a unit": {in: "106752d", unit: time.Second, wantErr: "too large"},
		"overflow through default": {
			in: "9223372036855", unit: time.Millisecond, wantErr: "too large",
		},
	}
	runParseCases(t, "ParseDuration", ParseDuration, testCases)
}

func TestParseErrorsWrapCauses(t *testing.T) {
	if _, err := ParseBytes("1.5g", MiB); !errors.Is(err, errFractional) {
		t.Errorf("ParseBytes(1.5g) error %v does not wrap errFractional", err)
	}
	if _, err := ParseDuration("-1s", time.Second); !errors.Is(err, errNegative) {
		t.Errorf("ParseDuration(-1s) error %v does not wrap errNegative", err)
	}
}

func TestFormatRoundTrips(t *testing.T) {
	sizes := map[string]struct {
		in   int64
		want string
	}{
		"zero":      {0, "0"},
		"bytes":     {1536, "1536b"},
		"kibibytes": {3 << 10, "3k"},
		"mebibytes": {48 << 20, "48m"},
		"gibibytes": {1 << 30, "1g"},
		"pebibytes": {2 << 50, "2p"},
	}
	for name, tc := range sizes {
		t.Run("size "+name, func(t *testing.T) {
			got := FormatBytes(tc.in)
			if got != tc.want {
				t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
			}
			if back, err := ParseBytes(got, MiB); err != nil || back != tc.in {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", got, back, err, tc.in)
			}
		})
	}
	durations := map[string]struct {
		in   time.Duration
		want string
	}{
		"zero":         {0, "0s"},
		"microseconds": {1500 * time.Microsecond, "1500us"},
		"milliseconds": {250 * time.Millisecond, "250ms"},
		"seconds":      {90 * time.Second, "90s"},
		"minutes":      {5 * time.Minute, "5m"},
		"hours":        {2 * time.Hour, "2h"},
		"days":         {48 * time.Hour, "2d"},
	}
	for name, tc := range durations {
		t.Run("duration "+name, func(t *testing.T) {
			got := FormatDuration(tc.in)
			if got != tc.want {
				t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
			}
			if back, err := ParseDuration(got, time.Second); err != nil || back != tc.in {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.in)
			}
		})
	}
}
