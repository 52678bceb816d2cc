package config

// Capture is what with-lock keeps of the command's output: held back and
// printed only when the run fails, and its tail sent with the end ping
// and stored in the run's record. Nothing is captured unless one of them
// asks for it.
type Capture struct {
	OutputOnFailure bool // hold the output back; print it only if the run failed
	RecordOutput    int  // KiB of the output's end kept in the run's record; 0: none
	PingOutput      int  // KiB of the output's end sent with the end ping; 0: none
}

// Bounds of the output's tail, in KiB. A record is kept --history-size
// times per name, in Redis's memory; healthchecks.io keeps 100 KB of a
// ping's body, a self-hosted server what PING_BODY_LIMIT says.
const (
	MaxRecordOutput     = 64
	DefaultPingOutput   = 10
	MaxPingOutput       = 1024
	outputOnFailureFlag = "output-on-failure"
)

// OutputOnFailureIsAFlag reports whether --output-on-failure was given on
// the command line, rather than by its variable or the config file: only
// then does it hold back the output of a run at a terminal.
func (c *Config) OutputOnFailureIsAFlag() bool { return c.source(outputOnFailureFlag) == fromFlag }

// validateCapture checks the output's sizes.
func (c *Config) validateCapture() error {
	switch {
	case c.RecordOutput < 0 || c.RecordOutput > MaxRecordOutput:
		return c.bad("record-output", "%d is outside 0-%d (KiB)", c.RecordOutput, MaxRecordOutput)
	case c.PingOutput < 0 || c.PingOutput > MaxPingOutput:
		return c.bad("ping-output", "%d is outside 0-%d (KiB)", c.PingOutput, MaxPingOutput)
	}
	return nil
}
