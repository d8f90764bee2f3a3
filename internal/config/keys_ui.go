package config

// The web UI, which serves the driver's Prometheus metrics.
var (
	UIEnabled = Bool("spark.ui.enabled", true,
		"Serve the driver's web UI, with its Prometheus metrics at `/metrics` and `/metrics/executors/prometheus`, "+
			"on spark.ui.port. If it cannot start, the application goes on without it.")

	UIPort = Int("spark.ui.port", 4040,
		"Port of the driver's web UI. When it is taken, the next ports are tried, up to 16 more, as Spark does; "+
			"0 picks a free port.",
		InRange(0, 65535))
)
