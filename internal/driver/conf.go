package driver

import (
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/k8s/podspec"
)

// LoadConf reads the driver's configuration: propertiesFile, then the
// --conf pairs, then the overrides (--master, --name, --deploy-mode). A
// cluster-mode driver reads the properties drover submit mounted, and its
// sensitive settings from submit's Secret beside them; a process node in
// tests says through getenv where it put them. It returns the warnings
// config.Load gives.
func LoadConf(propertiesFile string, pairs []string, overrides map[string]string, getenv func(string) string) (*config.Conf, []string, error) {
	propsFile := podspec.LocalConfFile(propertiesFile, getenv)
	var secretsFile string
	if propertiesFile == podspec.DriverConfFile {
		secretsFile = podspec.LocalConfFile(podspec.DriverSecretFile, getenv)
	}
	return config.Load(config.Sources{PropertiesFile: propsFile, SecretsFile: secretsFile, Pairs: pairs, Overrides: overrides})
}
