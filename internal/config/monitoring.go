package config

// Monitoring is what with-lock tells the monitoring about a run: a
// Prometheus textfile (--metrics-dir).
type Monitoring struct {
	MetricsDir string // write with-lock-<name>.prom here at the end of every run
}
