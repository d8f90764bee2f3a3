package ui

import (
	"regexp"
	"strings"

	"github.com/drover-project/drover/internal/appstate"
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
)

// attributePrefix marks an executor attribute set through the executor's
// environment, as on Spark: spark.executorEnv.SPARK_EXECUTOR_ATTRIBUTE_X
// gives {{X}}.
const attributePrefix = "spark.executorEnv.SPARK_EXECUTOR_ATTRIBUTE_"

var placeholder = regexp.MustCompile(`\{\{([A-Za-z0-9_\-]+)\}\}`)

// logLinks fills spark.ui.custom.executor.log.url for each executor, and
// else links its kept log.
type logLinks struct {
	template string
	// common are the attributes every executor shares.
	common map[string]string
	kept   keptLogs
	// base is Options.BasePath, for the links of the REST API.
	base string
}

// logLinks reads the template and the shared attributes from the
// application's configuration, so a history server builds the same links.
func (u *UI) logLinks() logLinks {
	l := logLinks{common: map[string]string{}, kept: u.keptLogs(), base: u.opts.BasePath}
	l.template, _ = u.store.ConfValue(config.UICustomExecutorLogURL.Key())
	if l.template == "" {
		return l
	}
	app := u.store.App()
	l.common["APP_ID"] = app.ID
	ns, ok := u.store.ConfValue(config.KubernetesNamespace.Key())
	if !ok && strings.HasPrefix(app.Master, "k8s://") {
		ns = config.KubernetesNamespace.Default(nil)
	}
	if ns != "" {
		l.common["KUBERNETES_NAMESPACE"] = ns
	}
	for _, p := range u.store.Conf() {
		// A value naming another variable, $(VAR), is resolved in the pod,
		// where the driver cannot see it.
		if name, ok := strings.CutPrefix(p.Key, attributePrefix); ok && name != "" && !strings.Contains(p.Value, "$(") {
			l.common[strings.ToUpper(name)] = p.Value
		}
	}
	return l
}

// attributes are the values the placeholders of x's link can take.
func (l logLinks) attributes(x appstate.Executor) map[string]string {
	attrs := make(map[string]string, len(l.common)+3)
	for k, v := range l.common {
		attrs[k] = v
	}
	attrs["EXECUTOR_ID"] = x.ID.String()
	if x.Pod != "" {
		attrs["POD_NAME"] = x.Pod
	}
	if x.Node != "" {
		attrs["NODE_NAME"] = x.Node
	}
	return attrs
}

// url is x's log link: empty without a template, for the driver, or when a
// placeholder has no value for x (Spark then keeps no custom link either).
func (l logLinks) url(x appstate.Executor) string {
	if l.template == "" || x.ID == executorid.Driver {
		return ""
	}
	attrs := l.attributes(x)
	missing := false
	out := placeholder.ReplaceAllStringFunc(l.template, func(m string) string {
		v, ok := attrs[m[2:len(m)-2]]
		if !ok {
			missing = true
		}
		return v
	})
	if missing {
		return ""
	}
	return out
}

// link is x's log link on the pages: the custom one when it resolves
// (spark.ui.custom.executor.log.url takes precedence, as it does in Spark),
// else its kept log's, from the UI's root; empty when it has neither.
func (l logLinks) link(x appstate.Executor) string {
	if url := l.url(x); url != "" {
		return url
	}
	return l.kept.path(x)
}

// apiLink is link for the REST API: a kept log's under Options.BasePath.
func (l logLinks) apiLink(x appstate.Executor) string {
	if url := l.url(x); url != "" {
		return url
	}
	if p := l.kept.path(x); p != "" {
		return l.base + p
	}
	return ""
}
