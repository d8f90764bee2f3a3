// Package parquetio reads and writes Parquet files (with
// github.com/parquet-go/parquet-go) for datasets of flat Go structs, on
// executors that do not know the struct's type: the driver describes its
// columns as plain data (Columns) and executors transcode between Parquet
// values and the record encoding of internal/codec.
//
// Reading is planned from footers alone (RowGroups) and each task reads
// one row group's chunks of the projected columns, through an io.ReaderAt,
// so a store serves only those byte ranges.
package parquetio
