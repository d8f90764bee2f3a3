// Command parquet aggregates sales stored as Parquet, as a Spark SQL
// "SELECT region, count(*), sum(units), sum(units * price) ... GROUP BY
// region" would: it generates sales records, saves them with SaveAsParquet
// (into a local directory or an s3:// prefix), reads back only the three
// columns the aggregation needs with ReadParquet, and totals them per
// region with ReduceByKey.
//
//	go run ./examples/parquet --master 'local-cluster[2,1,1024]' /tmp/sales 1000000
//
// With s3://bucket/sales, the store is set with spark.hadoop.fs.s3a.* (see
// the README's "Reading and writing data"). The output must not exist yet.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/drover-project/drover"
)

// Sale is one sale, a row of the Parquet files.
type Sale struct {
	ID       int64    `parquet:"id"`
	Time     int64    `parquet:"time"` // Unix seconds
	Region   string   `parquet:"region"`
	Store    string   `parquet:"store"`
	Product  string   `parquet:"product"`
	Customer string   `parquet:"customer"`
	Units    int32    `parquet:"units"`
	Price    float64  `parquet:"price"`
	Discount *float32 `parquet:"discount,optional"` // none for most sales
	Channel  string   `parquet:"channel"`
}

// RegionSale is the columns the aggregation reads: ReadParquet reads only
// the fields of its type, so the other seven columns stay in the store.
type RegionSale struct {
	Region string  `parquet:"region"`
	Units  int32   `parquet:"units"`
	Price  float64 `parquet:"price"`
}

// Totals are a region's aggregates.
type Totals struct {
	Sales   int64
	Units   int64
	Revenue float64
}

var regions = []string{"north", "south", "east", "west", "centre", "islands"}

// NewSale is sale i, derived from i alone so that any task can make it
// and a test can recompute the totals. Prices are whole quarters, so sums
// are exact whatever order the tasks add them in.
func NewSale(i int64) Sale {
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	s := Sale{
		ID:       i,
		Time:     1_767_225_600 + i*7, // from 1 January 2026
		Region:   regions[x%uint64(len(regions))],
		Store:    "store-" + strconv.FormatUint((x>>8)%200, 10),
		Product:  "sku-" + strconv.FormatUint((x>>16)%5000, 10),
		Customer: "c" + strconv.FormatUint((x>>24)%100_000, 36),
		Units:    int32(1 + (x>>40)%9),
		Price:    float64(1+(x>>44)%400) / 4,
		Channel:  []string{"shop", "web", "phone"}[(x>>52)%3],
	}
	if (x>>56)%10 == 0 {
		d := float32((x>>58)%4+1) / 20
		s.Discount = &d
	}
	return s
}

var (
	newSale  = drover.RegisterMap("parquet.newSale", NewSale)
	byRegion = drover.RegisterMap("parquet.byRegion", func(s RegionSale) drover.KV[string, Totals] {
		return drover.KV[string, Totals]{Key: s.Region, Value: Totals{Sales: 1, Units: int64(s.Units), Revenue: float64(s.Units) * s.Price}}
	})
	addTotals = drover.RegisterReduce("parquet.addTotals", func(a, b Totals) Totals {
		return Totals{Sales: a.Sales + b.Sales, Units: a.Units + b.Units, Revenue: a.Revenue + b.Revenue}
	})
)

// Generate saves n sales as Parquet into dir, one file per partition.
func Generate(ctx *drover.Context, dir string, n int64, partitions int) error {
	return drover.Map(drover.Range(ctx, 0, n, 1, partitions), newSale).SaveAsParquet(dir)
}

// Aggregate totals the sales of the Parquet files under dir by region, in
// decreasing order of revenue.
func Aggregate(ctx *drover.Context, dir string) ([]drover.KV[string, Totals], error) {
	sales := drover.ReadParquet[RegionSale](ctx, dir)
	totals, err := drover.ReduceByKey(drover.Map(sales, byRegion), addTotals, 0).Collect()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(totals, func(a, b drover.KV[string, Totals]) int {
		return cmp.Or(cmp.Compare(b.Value.Revenue, a.Value.Revenue), cmp.Compare(a.Key, b.Key))
	})
	return totals, nil
}

func run(ctx *drover.Context, out io.Writer) error {
	args := ctx.Args()
	if len(args) < 1 || len(args) > 3 {
		return fmt.Errorf("usage: parquet <output directory or s3:// prefix> [number of sales, default 1000000] [partitions, default 8]")
	}
	n, partitions := int64(1_000_000), 8
	if len(args) >= 2 {
		var err error
		if n, err = strconv.ParseInt(args[1], 10, 64); err != nil || n < 1 {
			return fmt.Errorf("number of sales: expected a positive integer, got %q", args[1])
		}
	}
	if len(args) == 3 {
		var err error
		if partitions, err = strconv.Atoi(args[2]); err != nil || partitions < 1 {
			return fmt.Errorf("partitions: expected a positive integer, got %q", args[2])
		}
	}
	if err := Generate(ctx, args[0], n, partitions); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "parquet: saved %d sales to %s\n", n, args[0])
	totals, err := Aggregate(ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%-8s %10s %10s %14s\n", "region", "sales", "units", "revenue")
	for _, t := range totals {
		fmt.Fprintf(out, "%-8s %10d %10d %14.2f\n", t.Key, t.Value.Sales, t.Value.Units, t.Value.Revenue)
	}
	return nil
}

func main() { drover.Main(func(ctx *drover.Context) error { return run(ctx, os.Stdout) }) }
