package config

import (
	"io"
	"os"

	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/pflag"
)

// EarlyLogFormat returns the --log-format that args (without the program
// name), the environment and the config file ask for, read as far as each
// can be read. It is for the error that says why Parse failed: a log
// shipper that asked for JSON by any of the three must get that error as
// JSON too, even when the flag parsing stopped early, a variable is bad or
// the file does not parse. A flag beats its variable, which beats the
// file, as in Parse; anything but LogJSON reads as LogText.
func EarlyLogFormat(args []string, getenv func(string) string) string {
	var format, file string
	var formatSet, fileSet bool
	fs := newFlagSet(&Config{})
	fs.ParseErrorsAllowlist.UnknownFlags = true
	// Values are recorded, not set: a bad value elsewhere does not stop
	// the scan. An error (a flag's value missing at the end) keeps what
	// was found before it.
	_ = fs.ParseAll(args, func(f *pflag.Flag, value string) error {
		switch f.Name {
		case "log-format":
			format, formatSet = value, true
		case "config":
			file, fileSet = value, true
		}
		return nil
	})
	switch {
	case formatSet:
	case getenv(lookup("log-format").env) != "":
		format = getenv(lookup("log-format").env)
	default:
		if !fileSet {
			file = getenv(EnvConfig)
		}
		if file == "" {
			file = defaultFile
		}
		format = fileLogFormat(file)
	}
	if format == LogJSON {
		return LogJSON
	}
	return LogText
}

// fileLogFormat returns the log-format key of the config file at path,
// read up to the first line that does not parse; "" when it has none or
// cannot be read.
func fileLogFormat(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		return ""
	}
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable {
			return "" // what follows is in a table: no setting of ours
		}
		if e.Kind != unstable.KeyValue {
			continue
		}
		key := e.Key()
		if !key.Next() || string(key.Node().Data) != "log-format" || key.Next() {
			continue
		}
		if v := e.Value(); v.Kind == unstable.String {
			return string(v.Data)
		}
		return ""
	}
	return ""
}
