package objstore

import (
	"github.com/drover-project/drover/internal/config"
)

// Config says how to reach the store. Empty fields defer to the AWS SDK's
// default chain (environment, shared config files, web identity).
type Config struct {
	Endpoint  string // spark.hadoop.fs.s3a.endpoint; https is assumed without a scheme
	PathStyle bool   // spark.hadoop.fs.s3a.path.style.access
	Region    string // spark.hadoop.fs.s3a.endpoint.region

	// Static credentials (spark.hadoop.fs.s3a.access.key, .secret.key,
	// .session.token). Only the driver has them: they are not among
	// ExecutorKeys.
	AccessKey, SecretKey, SessionToken string
}

// ConfigFrom reads the store's settings from c.
func ConfigFrom(c *config.Conf) Config {
	return Config{
		Endpoint:     config.S3AEndpoint.Get(c),
		PathStyle:    config.S3APathStyleAccess.Get(c),
		Region:       config.S3AEndpointRegion.Get(c),
		AccessKey:    config.S3AAccessKey.Get(c),
		SecretKey:    config.S3ASecretKey.Get(c),
		SessionToken: config.S3ASessionToken.Get(c),
	}
}

// ExecutorKeys are the settings executors need to reach the store: where
// it is and how to address it, never credentials, which executors take
// from their own environment (the default chain).
var ExecutorKeys = []string{
	config.S3AEndpoint.Key(), config.S3APathStyleAccess.Key(), config.S3AEndpointRegion.Key(),
}
