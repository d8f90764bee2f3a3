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
<thead><tr><th>App ID</th><th>App Name</th><th>Started</th><th>Completed</th><th>Duration</th><th>User</th><th>Status</th><th>Last Updated</th><th>Event Log</th></tr></thead>
<tbody>
{{range .Apps}}<tr>
<td><a href="/history/{{.ID}}/jobs/">{{.ID}}</a></td>
<td>{{.Name}}</td>
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

// listPage is the list of applications, the most recently written first.
func (s *Server) listPage(w http.ResponseWriter, _ *http.Request) {
	var rows []appRow
	for _, a := range s.list() {
		rows = append(rows, a.row())
	}
	var b bytes.Buffer
	err := listTemplate.Execute(&b, struct {
		Dir, Version string
		Apps         []appRow
	}{s.opts.Dir, s.opts.Version, rows})
	if err != nil {
		s.opts.Logger.Error("history: rendering the list page", "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
