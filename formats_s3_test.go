//go:build integration

package drover

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/drover-project/drover/internal/testenv"
)

// TestJSONLines reads JSON lines in many splits (lines cut at split ends)
// from a local directory and from S3, on both local masters, writes them
// back with SaveAsJSONLines and checks the output with encoding/json.
func TestJSONLines(t *testing.T) {
	people := jsonPeople(2000)
	text := jsonLinesText(t, people)
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "data"); err != nil {
		t.Fatal(err)
	}
	localIn := filepath.Join(t.TempDir(), "people")
	if err := os.MkdirAll(localIn, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(localIn, "all.json"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two objects on S3, cut at a line end.
	cut := strings.Index(text[len(text)/2:], "\n") + len(text)/2 + 1
	s3Put(t, srv, "data", "people/a.json", text[:cut])
	s3Put(t, srv, "data", "people/b.json", text[cut:])

	want := sortPeople(roundTripped(t, people))
	for i, master := range masters {
		for _, store := range []struct{ name, in, out string }{
			{"local", localIn, filepath.Join(t.TempDir(), "out")},
			{"s3", "s3a://data/people", fmt.Sprintf("s3://data/out%d", i)},
		} {
			t.Run(master+"/"+store.name, func(t *testing.T) {
				runJob(t, master, func(ctx *Context) error {
					ds := ReadJSONLines[jsonPerson](ctx, store.in)
					if n := ds.NumPartitions(); n < 10 {
						t.Errorf("%d partitions, want many splits of 7000 bytes", n)
					}
					got, err := ds.Collect()
					if err != nil {
						return err
					}
					if diff := gocmp.Diff(want, sortPeople(got)); diff != "" {
						t.Errorf("records read (-want +got):\n%s", diff)
					}
					if err := ds.Coalesce(3).SaveAsJSONLines(store.out); err != nil {
						return err
					}
					back, err := ReadJSONLines[jsonPerson](ctx, store.out).Collect()
					if err != nil {
						return err
					}
					if diff := gocmp.Diff(want, sortPeople(back)); diff != "" {
						t.Errorf("records read back (-want +got):\n%s", diff)
					}
					return nil
				}, append(srv.Conf(), "spark.files.maxPartitionBytes=7000")...)
				// encoding/json reads what drover wrote.
				var files map[string]string
				if store.name == "s3" {
					files = map[string]string{}
					prefix := strings.TrimPrefix(store.out, "s3://data/")
					for _, k := range s3Keys(t, srv, "data", prefix+"/") {
						files[strings.TrimPrefix(k, prefix+"/")] = s3Get(t, srv, "data", k)
					}
				} else {
					files = readDir(t, store.out)
				}
				names := slices.Sorted(mapKeys(files))
				if diff := gocmp.Diff([]string{"_SUCCESS", "part-00000.json", "part-00001.json", "part-00002.json"}, names); diff != "" {
					t.Errorf("output files (-want +got):\n%s", diff)
				}
				var decoded []jsonPerson
				for _, name := range names[1:] {
					for line := range strings.Lines(files[name]) {
						var p jsonPerson
						if err := json.Unmarshal([]byte(line), &p); err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						decoded = append(decoded, p)
					}
				}
				if diff := gocmp.Diff(want, sortPeople(decoded)); diff != "" {
					t.Errorf("output as encoding/json reads it (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestCompressedText reads gzip and zstd files beside a plain one by their
// extensions, locally and from S3, as text and as JSON lines: each
// compressed file is one partition however small the split size.
func TestCompressedText(t *testing.T) {
	lines := generatedLines(3000)
	people := jsonPeople(500)
	jsonText := jsonLinesText(t, people)
	files := map[string]string{
		"text/a.txt.gz":   gzipText(t, strings.Join(lines[:1000], "\n")+"\n"),
		"text/b.zst":      zstdText(t, strings.Join(lines[1000:2000], "\n")), // no final newline
		"text/c.txt":      strings.Join(lines[2000:], "\n") + "\n",
		"json/a.json.gz":  gzipText(t, jsonText[:strings.Index(jsonText, "\n")+1]),
		"json/b.json.zst": zstdText(t, jsonText[strings.Index(jsonText, "\n")+1:]),
	}
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "zipped"); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	for name, body := range files {
		s3Put(t, srv, "zipped", name, body)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(local, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(local, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantLines := slices.Sorted(slices.Values(lines))
	wantPeople := sortPeople(roundTripped(t, people))
	for _, master := range masters {
		for _, store := range []struct{ name, root string }{{"local", local}, {"s3", "s3://zipped"}} {
			root := store.root
			t.Run(master+"/"+store.name, func(t *testing.T) {
				runJob(t, master, func(ctx *Context) error {
					ds := TextFile(ctx, root+"/text")
					if n := ds.NumPartitions(); n < 4 {
						t.Errorf("%d partitions, want one per compressed file and several for the plain one", n)
					}
					got, err := ds.Collect()
					if err != nil {
						return err
					}
					if diff := gocmp.Diff(wantLines, slices.Sorted(slices.Values(got))); diff != "" {
						t.Errorf("lines (-want +got):\n%s", diff)
					}
					p := ReadJSONLines[jsonPerson](ctx, root+"/json")
					if n := p.NumPartitions(); n != 2 {
						t.Errorf("%d partitions of JSON lines, want 2, one per compressed file", n)
					}
					gotPeople, err := p.Collect()
					if err != nil {
						return err
					}
					if diff := gocmp.Diff(wantPeople, sortPeople(gotPeople)); diff != "" {
						t.Errorf("people (-want +got):\n%s", diff)
					}
					return nil
				}, append(srv.Conf(), "spark.files.maxPartitionBytes=5000")...)
			})
		}
	}
}

// TestParquet writes Parquet with SaveAsParquet (snappy, then zstd by
// spark.sql.parquet.compression.codec), locally and to S3 on both local
// masters, reads it back whole and as a 2-column projection, and checks the
// files with parquet-go's own typed reader.
func TestParquet(t *testing.T) {
	sales := pqSales(5000)
	want := slices.Clone(sales)
	wantRegions := make([]pqRegion, len(sales))
	for i, s := range sales {
		wantRegions[i] = pqRegion{s.Region, s.Amount}
	}
	byID := func(s []pqSale) []pqSale {
		slices.SortFunc(s, func(a, b pqSale) int { return int(a.ID - b.ID) })
		return s
	}
	byRegion := func(s []pqRegion) []pqRegion {
		slices.SortFunc(s, func(a, b pqRegion) int {
			return cmp.Or(strings.Compare(a.Region, b.Region), int(a.Amount-b.Amount))
		})
		return s
	}
	srv := testenv.NewS3(t)
	if err := srv.CreateBucket(context.Background(), "parquet"); err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, master := range masters {
		for _, store := range []string{"local", "s3"} {
			for _, codecName := range []string{"snappy", "zstd"} {
				i++
				out := filepath.Join(t.TempDir(), "sales")
				if store == "s3" {
					out = fmt.Sprintf("s3://parquet/sales%d", i)
				}
				t.Run(master+"/"+store+"/"+codecName, func(t *testing.T) {
					runJob(t, master, func(ctx *Context) error {
						if err := Parallelize(ctx, sales, 4).SaveAsParquet(out); err != nil {
							return err
						}
						ds := ReadParquet[pqSale](ctx, out)
						if n := ds.NumPartitions(); n != 4 {
							t.Errorf("%d partitions, want 4: one per row group", n)
						}
						got, err := ds.Collect()
						if err != nil {
							return err
						}
						if diff := gocmp.Diff(want, byID(got)); diff != "" {
							t.Errorf("records read back (-want +got):\n%s", diff)
						}
						regions, err := ReadParquet[pqRegion](ctx, out).Collect()
						if err != nil {
							return err
						}
						if diff := gocmp.Diff(byRegion(slices.Clone(wantRegions)), byRegion(regions)); diff != "" {
							t.Errorf("projection (-want +got):\n%s", diff)
						}
						// A glob over the output reads its parts, not its
						// _SUCCESS marker (an empty file, no Parquet).
						n, err := ReadParquet[pqSale](ctx, out+"/*").Count()
						if err != nil {
							return fmt.Errorf("reading the output by a glob: %w", err)
						}
						if n != int64(len(want)) {
							t.Errorf("%d records read by a glob, want %d", n, len(want))
						}
						return nil
					}, append(srv.Conf(), "spark.sql.parquet.compression.codec="+codecName)...)
					// parquet-go's typed reader reads every part.
					var files map[string]string
					if store == "s3" {
						files = map[string]string{}
						prefix := strings.TrimPrefix(out, "s3://parquet/")
						for _, k := range s3Keys(t, srv, "parquet", prefix+"/") {
							files[strings.TrimPrefix(k, prefix+"/")] = s3Get(t, srv, "parquet", k)
						}
					} else {
						files = readDir(t, out)
					}
					names := slices.Sorted(mapKeys(files))
					if diff := gocmp.Diff([]string{"_SUCCESS", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet", "part-00003.parquet"}, names); diff != "" {
						t.Errorf("output files (-want +got):\n%s", diff)
					}
					var all []pqSale
					for _, name := range names[1:] {
						body := files[name]
						rows, err := parquet.Read[pqSale](strings.NewReader(body), int64(len(body)))
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						f, err := parquet.OpenFile(strings.NewReader(body), int64(len(body)))
						if err != nil {
							t.Fatal(err)
						}
						if got := f.Metadata().RowGroups[0].Columns[0].MetaData.Codec.String(); got != strings.ToUpper(codecName) {
							t.Errorf("%s: codec %s, want %s", name, got, strings.ToUpper(codecName))
						}
						all = append(all, rows...)
					}
					if diff := gocmp.Diff(want, byID(all)); diff != "" {
						t.Errorf("parquet-go's reader (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func jsonPeople(n int) []jsonPerson {
	people := make([]jsonPerson, n)
	for i := range people {
		p := jsonPerson{Name: fmt.Sprintf("person \"%d\" <ü>", i), Age: i % 90, Scores: map[string]uint16{}}
		for j := range i % 3 {
			p.Emails = append(p.Emails, fmt.Sprintf("p%d.%d@example.com", i, j))
			p.Scores[fmt.Sprint("s", j)] = uint16(i * j)
		}
		if i%2 == 0 {
			p.Address = &jsonAddress{City: "Lyon", Zip: [2]int8{int8(i % 100), -1}}
		}
		people[i] = p
	}
	return people
}

// jsonLinesText is people as JSON lines, with a blank line and a CRLF line
// ending, which readers skip and trim.
func jsonLinesText(t *testing.T, people []jsonPerson) string {
	t.Helper()
	var b strings.Builder
	for i, p := range people {
		line, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		if i == 3 {
			b.WriteString("\r\n\n")
		} else {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func sortPeople(p []jsonPerson) []jsonPerson {
	slices.SortFunc(p, func(a, b jsonPerson) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// roundTripped is p as json.Unmarshal reads json.Marshal's output: what a
// reader of JSON lines must give.
func roundTripped(t *testing.T, people []jsonPerson) []jsonPerson {
	t.Helper()
	out := make([]jsonPerson, len(people))
	for i, p := range people {
		b, _ := json.Marshal(p)
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type pqRegion struct {
	Region string  `parquet:"region"`
	Amount float64 `parquet:"amount"`
}
