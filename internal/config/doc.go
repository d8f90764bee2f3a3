// Package config is drover's typed configuration registry, with Spark's
// semantics.
//
// Every key drover understands is an [Entry], declared as a package-level
// variable of this package (keys_core.go, keys_k8s.go, …) with its Spark
// name, default, documentation and validation, and registered when the
// package is initialized:
//
//	ExecutorMemory = Bytes("spark.executor.memory", "1g", MiB, "Memory of each executor process.")
//
// A [Conf] holds the explicitly set values as strings, as Spark's SparkConf
// does; typed access goes through the entries:
//
//	conf, warnings, err := config.Load(config.Sources{Pairs: []string{"spark.executor.memory=4g"}})
//	mem := config.ExecutorMemory.Get(conf) // 4 GiB in bytes
//
// [Load] merges the defaults, a spark-defaults.conf properties file, the
// environment variables that Spark also reads, --conf pairs and explicit
// flags, in that order of precedence, and validates the result: each
// invalid value is a [*ValueError] naming the key, the value and what is
// expected. Unknown spark.* keys are warnings with a suggestion, unknown
// drover.* keys are errors.
//
// Sizes and durations use Spark's syntax ([ParseBytes], [ParseDuration]).
// Secret values never appear in [Conf.Redacted], [Conf.String] or logs.
// [Markdown] renders the registry as docs/configuration.md (`make docs`).
package config
