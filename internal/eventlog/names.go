package eventlog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// File and directory names, as Spark's event log writers spell them.
const (
	inProgress       = ".inprogress"
	rollingDirPrefix = "eventlog_v2_"
	eventsPrefix     = "events_"
	statusPrefix     = "appstatus_"
)

// Codecs are the compression codecs the event log writes and reads; the
// codec is the log file's extension (app-1.zstd), as in Spark, and zstd
// and snappy frame their data as Spark's do. gzip is drover's own; Spark's
// lz4 and lzf are not written.
var Codecs = []string{"zstd", "snappy", "gzip"}

// checkCodec is nil for a codec this package writes and reads; "" is no
// compression.
func checkCodec(codec string) error {
	if codec == "" || slices.Contains(Codecs, codec) {
		return nil
	}
	return fmt.Errorf("event log compression codec %q is not supported: use %s", codec, strings.Join(Codecs, ", "))
}

// CheckAppID is nil for an application id of letters, digits, '-', '.'
// and '_' only, starting with a letter or digit: the ids drover and Spark
// make, and what a Kubernetes label value and a certificate's URI allow.
// The history server serves only such ids: an event log is written by
// whoever can write the directory, and its id ends up in URL paths, links
// and headers (where "." or ".." would name another path).
func CheckAppID(appID string) error {
	if appID == "" {
		return fmt.Errorf("empty application id")
	}
	if len(appID) > maxAppID {
		return fmt.Errorf("application id of %d characters: at most %d are allowed", len(appID), maxAppID)
	}
	for i, r := range appID {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '-' && r != '.' && r != '_') {
			return fmt.Errorf("application id %q: only letters, digits, '-', '.' and '_' are allowed, starting with a letter or digit", appID)
		}
	}
	return nil
}

// maxAppID is the longest application id served: a file name's limit
// (pods labelled with one allow 63).
const maxAppID = 255

// sanitize makes an application id safe in a file name, as Spark's
// Utils.sanitizeDirName does: lower case, no spaces, colons, slashes or
// dots (the first dot starts the codec).
func sanitize(appID string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		switch r {
		case ' ', ':', '/', '\\':
			return '-'
		case '.', '{', '}':
			return '_'
		}
		return r
	}, appID))
}

func withCodec(name, codec string) string {
	if codec == "" {
		return name
	}
	return name + "." + codec
}

// logName is what a log's names are made of, as Spark's
// EventLogFileWriter.nameForAppAndAttempt makes it: the application id,
// followed by _<attemptId> for an attempt (sanitized with it).
func logName(appID, attemptID string) string {
	if attemptID == "" {
		return appID
	}
	return appID + "_" + attemptID
}

// singleName is the file of a log that is not rolled, once complete.
func singleName(appID, codec string) string { return withCodec(sanitize(appID), codec) }

// rollingDirName is the directory of a rolled log.
func rollingDirName(appID string) string { return rollingDirPrefix + sanitize(appID) }

// eventsName is the index-th file (from 1) of a rolled log.
func eventsName(appID string, index int, codec string) string {
	return withCodec(eventsPrefix+strconv.Itoa(index)+"_"+sanitize(appID), codec)
}

// statusName is the marker that says whether a rolled log is complete.
func statusName(appID string, running bool) string {
	name := statusPrefix + sanitize(appID)
	if running {
		name += inProgress
	}
	return name
}

// parseSingle splits the name of a log file into its application id, codec
// and whether it is still being written.
func parseSingle(name string) (appID, codec string, running bool) {
	name, running = strings.CutSuffix(name, inProgress)
	appID, codec, _ = strings.Cut(name, ".")
	return appID, codec, running
}

// parseEvents splits the name of a rolled log's events file into its
// index and codec; ok is false for other files.
func parseEvents(name string) (index int, codec string, ok bool) {
	rest, ok := strings.CutPrefix(name, eventsPrefix)
	if !ok {
		return 0, "", false
	}
	num, rest, ok := strings.Cut(rest, "_")
	if !ok {
		return 0, "", false
	}
	index, err := strconv.Atoi(num)
	if err != nil || index < 1 {
		return 0, "", false
	}
	_, codec, _ = strings.Cut(rest, ".")
	return index, codec, true
}
