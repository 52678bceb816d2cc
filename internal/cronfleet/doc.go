// Package cronfleet runs the README's crontab block, as it is written, on a
// fleet of three hosts under Debian's cron daemon: `make test-cron`. Its
// tests are kept out of `make test` by the build tag cronfleet, as they
// take minutes of real time and need the cron and faketime packages, which
// the make target installs.
package cronfleet
