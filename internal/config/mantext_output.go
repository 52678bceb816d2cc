package config

// manOutputText returns the man page's descriptions of the settings of the config file and what with-lock prints,
// by flag name (manText).
func manOutputText() map[string]string {
	return map[string]string{
		"config": `Read the settings from
.IR FILE .`,
		"quiet": `Print errors only: no message when the lock is busy, no warnings.`,
		"verbose": `One line per event on stderr, with a timestamp: acquired, waiting, renewed
(only when slow), lost, exited, released.`,
		"log-format": `.B text
or
.BR json :
everything with-lock prints on stderr as one JSON object per line, with the
fields time, level, event, lock, key, msg and, where they apply, holder,
since, fence, duration_ms, ttl_ms, code, signal, error, tracking, and on release cpu_ms and max_rss_kb.
It holds from the first line: an error in the flags, a variable or the config
file is JSON too when any of the three asks for json, and every error line
carries the exit code in code.`,
		"output-on-failure": `Hold the command's stdout and stderr back, as one stream in the order they
were written, and print them on stdout only if the run did not succeed (an
exit code other than 0, a lost lock, \-\-max\-run, a signal): cron then mails
only failures. Up to 256 MiB are kept whole, in memory and then in an
unlinked temporary file in $TMPDIR; past that the first 256 MiB and the last
MiB, with a line saying how much was cut between them. Set by
WITH_LOCK_OUTPUT_ON_FAILURE or the config file it leaves a run at a terminal
alone; as a flag it holds a terminal's output back too.`,
	}
}
