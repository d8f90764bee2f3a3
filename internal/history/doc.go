// Package history is drover's history server, Spark's HistoryServer: it
// finds the event logs in a directory, replays each into the web UI's
// state store, and serves every application's pages under
// /history/<appId>/ and its REST API under /api/v1/applications/<appId>/,
// with the list of all of them at / and /api/v1/applications.
//
// A driver restarted in its pod (spark.kubernetes.driver.restartPolicy=
// OnFailure) writes a log per attempt (events.AppStart.AttemptID), and
// its application lists them as Spark's history server lists attempts:
// an element of "attempts" each, the newest first, a line each on the
// list page, and each attempt served under /history/<appId>/<attemptId>/
// and /api/v1/applications/<appId>/<attemptId>/; without an attempt id
// the newest attempt answers. The log of a driver that cannot restart has
// no attempt id and is served as before.
//
// An application's kept logs (spark.driver.log.dfsDir) are linked and
// served by its UI under its pages' path, as
// /history/<appId>/<attemptId>/logs/executor/<id>, and read with
// Options.KeptLogStore (drover history's own object-store settings). What
// is not HTML, such as a log, passes through as it comes instead of being
// held to rewrite its links.
//
// Logs that change (applications still running) or appear are read again
// when asked for, at most once per update interval; a request for an
// unknown application reads the directory again sooner, but never within
// 5 s of the last read (each can be an S3 LIST).
//
// Event logs are written by whoever can write the directory, so what they
// say is not trusted: a log whose application id is not letters, digits,
// '-', '.' and '_', starting with a letter or digit (eventlog.CheckAppID),
// is logged and not served, the prefix given to an application's links is
// escaped all the same, and a line over eventlog.MaxLineBytes ends the
// read of its log.
package history
