package config

// connectionSettings declares the settings of the Redis connection.
func connectionSettings(c *Config) group {
	return group{"Redis connection", []setting{
		{name: "redis", env: EnvRedis, list: true, field: &c.RedisURLs, def: []string{DefaultRedisURL},
			help: "Redis `URL`; repeat for a quorum of independent masters, or the seeds of --cluster",
			man: `Redis URL, redis:// or rediss://, or
.IR host [: port ]
for
.BI redis:// host : port /0\fR.
Repeat for a quorum of independent masters (an odd number), or for the seeds
of \-\-cluster.`},
		{name: "redis-timeout", env: "WITH_LOCK_REDIS_TIMEOUT", field: &c.RedisTimeout, def: DefaultRedisTimeout,
			help: "give up on connecting to or hearing from Redis after `DUR`",
			man:  `Connect and command timeout, so a dead Redis never hangs cron.`},
		// tls-*, as their variables: a bare "key" or "cert" reads as the
		// lock's key (WITH_LOCK_KEY is the lock's key, set for the command).
		// The old names still work as hidden flags (tlsalias.go).
		{name: "tls-cacert", env: "WITH_LOCK_TLS_CACERT", field: &c.TLSCACert,
			help: "verify the server's TLS certificate against the CAs in `FILE` (rediss://)",
			man: `Verify the server's TLS certificate against the CA certificates in FILE
instead of the system's.`},
		{name: "tls-cert", env: "WITH_LOCK_TLS_CERT", field: &c.TLSCert, help: "TLS client certificate `FILE` (PEM, with --tls-key)",
			man: `TLS client certificate (PEM), presented with the key of
\-\-tls\-key (for a server with tls\-auth\-clients yes).`},
		{name: "tls-key", env: "WITH_LOCK_TLS_KEY", field: &c.TLSKey, help: "TLS client private key `FILE` (PEM)",
			man: `The private key (PEM) of the \-\-tls\-cert client certificate.`},
		{name: "tls-insecure", env: "WITH_LOCK_TLS_INSECURE", field: &c.TLSInsecure,
			help: "do not verify the server's TLS certificate (testing only)",
			man: `Do not verify the server's TLS certificate (testing only; with-lock warns).
Required for skip_verify=true in a URL.
The old names \-\-cacert, \-\-cert, \-\-key and \-\-insecure (as redis-cli
spells them) still work on the command line; in the config file the keys are
tls-cacert, tls-cert, tls-key and tls-insecure, and the old keys are refused
with exit 78.`},
		{name: "password-file", env: "WITH_LOCK_PASSWORD_FILE", field: &c.PasswordFile,
			help: "read the Redis password from `FILE` (mode 0600 or stricter)",
			man: `Read the Redis password from FILE, which must not be accessible by group or
others. Otherwise the password comes from the URL, then
.BR WITH_LOCK_PASSWORD ,
then
.BR REDISCLI_AUTH .`},
		{name: "sentinel", env: "WITH_LOCK_SENTINEL", list: true, field: &c.Sentinels,
			help: "Sentinel `HOST:PORT` (repeat for each sentinel)",
			man:  `A Sentinel to ask for the master (repeatable); needs \-\-sentinel\-master.`},
		{name: "sentinel-master", env: "WITH_LOCK_SENTINEL_MASTER", field: &c.SentinelMaster,
			help: "`NAME` of the master the sentinels monitor",
			man:  `Name of the master the sentinels monitor.`},
		{name: "sentinel-user", env: "WITH_LOCK_SENTINEL_USER", field: &c.SentinelUser, help: "ACL `USER` for the sentinels",
			man: `ACL user for the sentinels.`},
		{name: "sentinel-password-file", env: "WITH_LOCK_SENTINEL_PASSWORD_FILE", field: &c.SentinelPasswordFile,
			help: "read the sentinels' password from `FILE`",
			man: `Read the sentinels' password from FILE (or
.BR WITH_LOCK_SENTINEL_PASSWORD ).`},
		{name: "cluster", env: "WITH_LOCK_CLUSTER", field: &c.Cluster, help: "the --redis URLs are seeds of a Redis Cluster",
			man: `The \-\-redis URLs are seeds of a Redis Cluster.`},
	}}
}
