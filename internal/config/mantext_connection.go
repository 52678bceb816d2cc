package config

// manConnectionText returns the man page's descriptions of the settings of where Redis is and how to reach it,
// by flag name (manText).
func manConnectionText() map[string]string {
	return map[string]string{
		"redis": `Redis URL, redis:// or rediss://, or
.IR host [: port ]
for
.BI redis:// host : port /0\fR.
Repeat for a quorum of independent masters (an odd number), or for the seeds
of \-\-cluster.`,
		"redis-timeout": `Connect and command timeout, so a dead Redis never hangs cron.`,
		"tls-cacert": `Verify the server's TLS certificate against the CA certificates in FILE
instead of the system's.`,
		"tls-cert": `TLS client certificate (PEM), presented with the key of
\-\-tls\-key (for a server with tls\-auth\-clients yes).`,
		"tls-key": `The private key (PEM) of the \-\-tls\-cert client certificate.`,
		"tls-insecure": `Do not verify the server's TLS certificate (testing only; with-lock warns).
Required for skip_verify=true in a URL.
The old names \-\-cacert, \-\-cert, \-\-key and \-\-insecure (as redis-cli
spells them) still work on the command line; in the config file the keys are
tls-cacert, tls-cert, tls-key and tls-insecure, and the old keys are refused
with exit 78.`,
		"password-file": `Read the Redis password from FILE, which must not be accessible by group or
others. Otherwise the password comes from the URL, then
.BR WITH_LOCK_PASSWORD ,
then
.BR REDISCLI_AUTH .`,
		"sentinel":        `A Sentinel to ask for the master (repeatable); needs \-\-sentinel\-master.`,
		"sentinel-master": `Name of the master the sentinels monitor.`,
		"sentinel-user":   `ACL user for the sentinels.`,
		"sentinel-password-file": `Read the sentinels' password from FILE (or
.BR WITH_LOCK_SENTINEL_PASSWORD ).`,
		"cluster": `The \-\-redis URLs are seeds of a Redis Cluster.`,
	}
}
