// Package history is drover's history server, Spark's HistoryServer: it
// finds the event logs in a directory, replays each into the web UI's
// state store, and serves every application's pages under
// /history/<appId>/ and its REST API under /api/v1/applications/<appId>/,
// with the list of all of them at / and /api/v1/applications.
//
// Logs that change (applications still running) or appear are read again
// when asked for, at most once per update interval.
package history
