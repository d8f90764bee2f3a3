package settings

import (
	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/objstore"
)

// ObjectStore is the object store's configuration from Hadoop S3A's keys
// under spark.hadoop., with the tuning fields at their defaults.
func ObjectStore(c *config.Conf) objstore.Config {
	return objstore.Config{
		Endpoint:     config.S3AEndpoint.Get(c),
		PathStyle:    config.S3APathStyleAccess.Get(c),
		Region:       config.S3AEndpointRegion.Get(c),
		AccessKey:    config.S3AAccessKey.Get(c),
		SecretKey:    config.S3ASecretKey.Get(c),
		SessionToken: config.S3ASessionToken.Get(c),
	}.WithDefaults()
}

// ObjectStoreExecutorKeys are the settings executors need to reach the
// store: where it is and how to address it, never credentials, which
// executors take from their own environment (the default chain).
var ObjectStoreExecutorKeys = []string{
	config.S3AEndpoint.Key(), config.S3APathStyleAccess.Key(), config.S3AEndpointRegion.Key(),
}
