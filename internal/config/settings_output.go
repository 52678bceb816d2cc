package config

// configurationSettings declares the settings of the config file.
func configurationSettings(c *Config) group {
	return group{"Configuration", []setting{
		{name: "config", env: EnvConfig, cli: true, field: &c.File, def: defaultFile,
			help: "read settings from the TOML `FILE`; keys are the long flags' names",
			man: `Read the settings from
.IR FILE .`},
	}}
}

// outputSettings declares the settings of what with-lock prints.
func outputSettings(c *Config) group {
	return group{"Output", []setting{
		{name: "quiet", short: "q", env: "WITH_LOCK_QUIET", field: &c.Quiet,
			help: "print errors only: nothing when the lock is busy, no warnings",
			man:  `Print errors only: no message when the lock is busy, no warnings.`},
		{name: "verbose", short: "v", env: "WITH_LOCK_VERBOSE", field: &c.Verbose,
			help: "print one line per event on stderr: acquired, waiting, slow renewal, lost, released, exited",
			man: `One line per event on stderr, with a timestamp: acquired, waiting, renewed
(only when slow), lost, exited, released.`},
		{name: "log-format", env: "WITH_LOCK_LOG_FORMAT", field: &c.LogFormat, def: LogText, choices: []string{LogText, LogJSON},
			help: "`FORMAT` of what with-lock prints on stderr: text, or json (one object per line)",
			man: `.B text
or
.BR json :
everything with-lock prints on stderr as one JSON object per line, with the
fields time, level, event, lock, key, msg and, where they apply, holder,
since, fence, duration_ms, ttl_ms, code, signal, error, tracking, and on release cpu_ms and max_rss_kb.
It holds from the first line: an error in the flags, a variable or the config
file is JSON too when any of the three asks for json, and every error line
carries the exit code in code.`},
		{name: outputOnFailureFlag, env: "WITH_LOCK_OUTPUT_ON_FAILURE", field: &c.OutputOnFailure,
			help: "hold the command's output back and print it only if the run failed (for cron's MAILTO)",
			man: `Hold the command's stdout and stderr back, as one stream in the order they
were written, and print them on stdout only if the run did not succeed (an
exit code other than 0, a lost lock, \-\-max\-run, a signal): cron then mails
only failures. Up to 256 MiB are kept whole, in memory and then in an
unlinked temporary file in $TMPDIR; past that the first 256 MiB and the last
MiB, with a line saying how much was cut between them. Set by
WITH_LOCK_OUTPUT_ON_FAILURE or the config file it leaves a run at a terminal
alone; as a flag it holds a terminal's output back too.`},
	}}
}
