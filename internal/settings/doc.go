// Package settings turns the application's configuration (internal/config,
// the registry of keys) into the options structs of the packages below the
// driver, once, at start-up: those packages take their options and never
// read *config.Conf, so their tests build options directly and a key is
// parsed in one place.
//
// It is small and depends only on the packages whose options it builds, so
// the CLI (drover history's object store) and executors use it without
// linking the driver's assembly.
package settings
