package k8sconf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/drover-project/drover/internal/k8s/podspec"
	"github.com/drover-project/drover/internal/master"
)

// A driver that may restart in its pod finds the application's
// certificates in its Secret, under these names: drover submit makes them
// once, so that every attempt proves itself with the same, and the
// executors an attempt started, which keep theirs, are known to the next.
const (
	DriverTLSFile   = "driver-tls.pem"
	ExecutorTLSFile = "executor-tls.pem"
)

// CredentialFiles are the files of c in the driver's Secret: none for a
// shared secret, which travels as spark.authenticate.secret among the
// driver's sensitive settings.
func CredentialFiles(c master.StoredCredentials) map[string][]byte {
	if len(c.Driver) == 0 {
		return nil
	}
	return map[string][]byte{DriverTLSFile: c.Driver, ExecutorTLSFile: c.Executors}
}

// ReadCredentials reads the certificates CredentialFiles put in the
// driver's Secret, mounted at podspec.DriverSecretDir (where a process
// node put it, said by getenv: podspec.LocalConfFile); zero credentials
// when there are none.
func ReadCredentials(getenv func(string) string) (master.StoredCredentials, error) {
	var c master.StoredCredentials
	var errs []error
	for _, f := range []struct {
		name string
		to   *[]byte
	}{{DriverTLSFile, &c.Driver}, {ExecutorTLSFile, &c.Executors}} {
		b, err := os.ReadFile(podspec.LocalConfFile(path.Join(podspec.DriverSecretDir, f.name), getenv))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the application's certificates: %w", err))
		}
		*f.to = b
	}
	if err := errors.Join(errs...); err != nil {
		return master.StoredCredentials{}, err
	}
	if (len(c.Driver) == 0) != (len(c.Executors) == 0) {
		return master.StoredCredentials{}, fmt.Errorf("reading the application's certificates in %s: %s and %s go together; one is missing",
			podspec.DriverSecretDir, DriverTLSFile, ExecutorTLSFile)
	}
	return c, nil
}
