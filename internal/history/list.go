package history

import (
	"bytes"
	"html/template"
	"net/http"
	"time"
)

var listTemplate = template.Must(template.New("list").Funcs(template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"duration": func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return d.Round(100 * time.Millisecond).String()
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>History Server</title>
<style>
body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
th { background: #eee; }
.failed { color: #b00; }
.incomplete { color: #a60; }
</style>
</head>
<body>
<h1>History Server</h1>
<p>Event log directory: <code>{{.Dir}}</code> · drover {{.Version}} · <a href="/api/v1/applications">REST API</a></p>
{{if .Apps}}
<table>
<thead><tr><th>App ID</th>{{if .Attempts}}<th>Attempt ID</th>{{end}}<th>App Name</th><th>Started</th><th>Completed</th><th>Duration</th><th>User</th><th>Status</th><th>Last Updated</th><th>Event Log</th></tr></thead>
<tbody>
{{range .Apps}}<tr>
<td><a href="/history/{{.ID}}/{{with .Attempt}}{{.}}/{{end}}jobs/">{{.ID}}</a></td>
{{if $.Attempts}}<td>{{.Attempt}}</td>
{{end}}<td>{{.Name}}</td>
<td>{{date .Start}}</td>
<td>{{date .End}}</td>
<td>{{duration .Duration}}</td>
<td>{{.User}}</td>
<td class="{{.Status}}">{{.Status}}{{if .Problem}} ({{.Problem}}){{end}}</td>
<td>{{date .Updated}}</td>
<td><code>{{.Log}}</code> ({{.Events}} events)</td>
</tr>
{{end}}</tbody>
</table>
{{else}}
<p>No event logs found: run applications with <code>spark.eventLog.enabled=true</code> and <code>spark.eventLog.dir</code> set to this directory.</p>
{{end}}
</body>
</html>
`))

// listPage is the list of applications, the most recently written first,
// with a line for each attempt, the newest first, and a column of attempt
// ids when any log is an attempt's.
func (s *Server) listPage(w http.ResponseWriter, _ *http.Request) {
	rows, attempts := s.rows()
	var b bytes.Buffer
	err := listTemplate.Execute(&b, struct {
		Dir, Version string
		Apps         []appRow
		Attempts     bool
	}{s.opts.Dir, s.opts.Version, rows, attempts})
	if err != nil {
		s.opts.Logger.Error("history: rendering the list page", "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
