// Package ui is the driver's web UI and its REST API: server-rendered pages
// (html/template, embedded assets, no JavaScript) of the jobs, stages,
// executors, the Kubernetes allocator and the configuration, and Spark's
// monitoring API under /api/v1/applications with Spark's JSON field names.
//
// Everything shown comes from an appstate.Store, so the same handler serves
// a live driver and, fed from an event log, a history server. Pages refresh
// themselves (a meta refresh) while the application runs. Serve and Listen
// run the HTTP server the way Spark does (spark.ui.port, trying the next
// ports when it is busy); callers mount more handlers, such as /metrics,
// with UI.Handle.
//
// When the application keeps its processes' logs (internal/keptlog,
// spark.driver.log.persistToDfs.enabled), the Executors page and the API's
// executorLogs link each one to KeptLogPath, where the UI reads it back
// from its directory or object store (keptlogs.go).
//
// [Auth] guards a handler with a token: a request passes with
// `Authorization: Bearer <token>` or the cookie (HttpOnly, SameSite=Strict)
// that a one-time [Auth.LoginLink] sets; tokens are compared in constant
// time. The driver wraps its pages and API in one on Kubernetes, and drover
// ui its local end.
package ui
