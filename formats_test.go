package drover

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

type jsonPerson struct {
	Name    string            `json:"name"`
	Age     int               `json:"age,omitempty"`
	Emails  []string          `json:"emails"`
	Address *jsonAddress      `json:"address"`
	Scores  map[string]uint16 `json:"scores"`
}

type jsonAddress struct {
	City string
	Zip  [2]int8 `json:"zip"`
}

// TestJSONLinesBadInput: a line that is not the type's JSON fails the job
// with the file's path; a type JSON lines cannot hold fails before any task
// with the field's name.
func TestJSONLinesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"name\":\"a\"}\n{\"name\":\"b\",\"age\":\"old\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type Address = jsonAddress
	type embedded struct{ Address }
	runJob(t, "local[2]", func(ctx *Context) error {
		for _, c := range []struct {
			name string
			err  func() error
			want []string
		}{
			{"bad line", func() error { _, err := ReadJSONLines[jsonPerson](ctx, bad).Collect(); return err },
				[]string{bad, "cannot read JSON string at .age into Go int", `old\"`}},
			{"unsupported type", func() error { _, err := ReadJSONLines[embedded](ctx, bad).Count(); return err },
				[]string{bad, "drover.embedded.Address: embedded fields"}},
			{"unsupported type saved", func() error {
				return Parallelize(ctx, []embedded{{}}, 1).SaveAsJSONLines(filepath.Join(dir, "out"))
			}, []string{"save as JSON lines", "drover.embedded.Address: embedded fields"}},
			{"missing path", func() error { _, err := ReadJSONLines[jsonPerson](ctx, filepath.Join(dir, "nope")).Count(); return err },
				[]string{filepath.Join(dir, "nope")}},
		} {
			err := c.err()
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %v, want one containing %q", c.name, err, w)
				}
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("a failed save left %s: %v", filepath.Join(dir, "out"), err)
	}
}

func gzipText(t *testing.T, text string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func zstdText(t *testing.T, text string) string {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return string(enc.EncodeAll([]byte(text), nil))
}

// TestCompressedTextCorrupt: a .gz file that is not gzip fails the job
// with its path.
func TestCompressedTextCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.gz")
	if err := os.WriteFile(path, []byte("plain text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runJob(t, "local[1]", func(ctx *Context) error {
		_, err := TextFile(ctx, path).Count()
		if err == nil || !strings.Contains(err.Error(), path+" as gzip") {
			t.Errorf("error %v, want one naming %s as gzip", err, path)
		}
		return nil
	})
}

type pqSale struct {
	ID     int64    `parquet:"id"`
	Region string   `parquet:"region"`
	Amount float64  `parquet:"amount"`
	Note   *string  `parquet:"note,optional"`
	Units  uint32   `parquet:"units"`
	Raw    []byte   `parquet:"raw"`
	OK     bool     `parquet:"ok"`
	Rate   *float32 `parquet:"rate,optional"`
}

func pqSales(n int) []pqSale {
	sales := make([]pqSale, n)
	for i := range sales {
		s := pqSale{ID: int64(i), Region: fmt.Sprint("r", i%7), Amount: float64(i) * 1.5, Units: uint32(i % 13),
			Raw: []byte(fmt.Sprint(i)), OK: i%2 == 0}
		if i%3 == 0 {
			note, rate := fmt.Sprint("note ", i), float32(i)/7
			s.Note, s.Rate = &note, &rate
		}
		sales[i] = s
	}
	return sales
}

// TestParquetBadInput: a file that is not Parquet, and a struct with a
// field Parquet records cannot have, each give one error naming the path
// or the field, before any task runs.
func TestParquetBadInput(t *testing.T) {
	dir := t.TempDir()
	notParquet := filepath.Join(dir, "data.parquet")
	if err := os.WriteFile(notParquet, []byte("id,region\n1,eu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type withList struct {
		ID   int64
		Tags []string
	}
	runJob(t, "local[2]", func(ctx *Context) error {
		for _, c := range []struct {
			name string
			err  func() error
			want []string
		}{
			{"not Parquet", func() error { _, err := ReadParquet[pqSale](ctx, notParquet).Count(); return err },
				[]string{"read Parquet " + notParquet, "not a Parquet file"}},
			{"unsupported field", func() error { _, err := ReadParquet[withList](ctx, notParquet).Count(); return err },
				[]string{"field drover.withList.Tags", "not supported"}},
			{"unsupported field saved", func() error {
				return Parallelize(ctx, []withList{{}}, 1).SaveAsParquet(filepath.Join(dir, "out"))
			}, []string{"save as Parquet", "field drover.withList.Tags"}},
		} {
			err := c.err()
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %v, want one containing %q", c.name, err, w)
				}
			}
		}
		return nil
	})
}
