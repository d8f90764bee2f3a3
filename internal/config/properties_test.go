package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProperties(t *testing.T) {
	testCases := map[string]struct {
		text    string
		want    []property
		wantErr string
	}{
		"separators": {
			text: "a 1\nb=2\nc: 3\nd\t4\ne = 5\nf : 6\ng   =   7\n",
			want: []property{
				{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}, {"d", "4", 4},
				{"e", "5", 5}, {"f", "6", 6}, {"g", "7", 7},
			},
		},
		"comments and blank lines": {
			text: "# a comment\n! another\n   # indented comment\n\n   \nkey value\n",
			want: []property{{"key", "value", 6}},
		},
		"values are trimmed, inner spaces kept": {
			text: "spark.app.name   my  app   \t\n",
			want: []property{{"spark.app.name", "my  app", 1}},
		},
		"a key alone has an empty value": {
			text: "spark.driver.host\nspark.app.name =\n",
			want: []property{{"spark.driver.host", "", 1}, {"spark.app.name", "", 2}},
		},
		"only the first separator splits": {
			text: "spark.driver.extraJavaOptions=-Da=b -Dc:d\n",
			want: []property{{"spark.driver.extraJavaOptions", "-Da=b -Dc:d", 1}},
		},
		"# inside a value is not a comment": {
			text: "spark.app.name app#1\n",
			want: []property{{"spark.app.name", "app#1", 1}},
		},
		"continuation lines": {
			text: "spark.local.dir /a,\\\n    /b,\\\n    /c\nnext 1\n",
			want: []property{{"spark.local.dir", "/a,/b,/c", 1}, {"next", "1", 4}},
		},
		"escaped backslash is not a continuation": {
			text: "path C:\\\\temp\\\\\nnext 1\n",
			want: []property{{"path", `C:\temp\`, 1}, {"next", "1", 2}},
		},
		"escapes in keys and values": {
			text: "a\\=b\\ c value\\twith\\ttabs\nu \\u00e9t\\u00E9\nemoji \\ud83d\\ude00\n",
			want: []property{{"a=b c", "value\twith\ttabs", 1}, {"u", "été", 2}, {"emoji", "😀", 3}},
		},
		"windows line endings": {
			text: "a 1\r\nb 2\r\n",
			want: []property{{"a", "1", 1}, {"b", "2", 2}},
		},
		"later lines win in Load, all are returned here": {
			text: "a 1\na 2\n",
			want: []property{{"a", "1", 1}, {"a", "2", 2}},
		},
		"malformed unicode escape": {
			text:    "ok 1\nbad \\u12\n",
			wantErr: `line 2: malformed \uxxxx escape in "\\u12"`,
		},
		"empty file": {text: ""},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got, err := parseProperties(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseProperties error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(property{})); diff != "" {
				t.Errorf("parseProperties (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLoadPropertiesFileLastLineWins(t *testing.T) {
	file := writeFile(t, "spark-defaults.conf", "spark.executor.cores 2\nspark.executor.cores=4   \n")
	conf, _, err := Load(Sources{PropertiesFile: file, Env: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ExecutorCores.Get(conf); got != 4 {
		t.Errorf("spark.executor.cores = %d, want 4", got)
	}
}
