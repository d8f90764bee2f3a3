package config

// The web UI's token on Kubernetes (docs/ui.md, docs/security.md): the UI
// and its REST API listen on the pod network, where any pod reaches them.
var (
	UIRequireToken = Bool("drover.ui.requireToken", true,
		"On `k8s://` masters, the web UI and the REST API answer only requests that carry the application's "+
			"UI token (drover.ui.token): `drover ui` passes it, a browser gets a cookie from a one-time link; "+
			"`/metrics` answers without it. `false` serves them to anyone who reaches the driver, as Spark does "+
			"(the driver warns). No effect under local masters.")

	UIToken = String("drover.ui.token", "",
		"The application's UI token (drover.ui.requireToken). Unset, drover submit generates a random one for a "+
			"cluster-mode driver and keeps it in the driver's Secret, where `drover ui` reads it; a client-mode "+
			"driver generates one and prints a one-time login link on its terminal. Set it to reach a client-mode "+
			"driver's UI from elsewhere (`Authorization: Bearer <token>`). Never logged or shown.",
		Optional(), Secret(),
		Check("of 16 to 1024 letters, digits, '-', '_', '.' or '~'", validUIToken))
)

// validUIToken: long enough to guess at no better than chance, and made of
// characters that a header and a cookie carry unchanged.
func validUIToken(s string) bool {
	if len(s) < 16 || len(s) > 1024 {
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '-', r == '_', r == '.', r == '~':
		default:
			return false
		}
	}
	return true
}
