// Package authconf decides how an application's processes authenticate
// from spark.authenticate, spark.network.crypto.enabled and
// spark.authenticate.secret, with each master's defaults: the
// master.SecurityOptions the driver and drover submit make credentials
// with. It sits apart from internal/settings, which the executor imports,
// because it names master's types.
package authconf
