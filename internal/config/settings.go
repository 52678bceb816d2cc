package config

// A setting is one flag: its names, default, help and environment
// variable, bound to the field of Config it fills, with its long
// description beside it. Every flag is declared in settings, and only
// there: a file per help group, settings_<group>.go. --help (usage.go),
// the man page (manpage.go), the completions, the example config file and
// the README's flag table (make docs) are written from it. How a setting
// becomes a flag and reads its variable is in flagset.go.
type setting struct {
	name  string // the long flag, without "--"
	short string // the one-letter flag, or ""
	env   string // the WITH_LOCK_* variable; "" for an action, which no environment should turn on
	cli   bool   // set only by its flag or variable, never by a key of the config file
	list  bool   // repeatable; its variable holds the values separated by spaces
	field any    // pointer to the Config field
	def   any    // the default, of the field's type; nil for the zero value
	help  string // pflag takes the `QUOTED` word as the value's name; FILE and DIR complete as paths
	// choices are the values it takes, offered by the shells' completions;
	// nil for any (a path when the value's name is FILE or DIR).
	choices []string
	// man is the man page's description, in roff, when it says more than
	// help's one line; the default and the variable are added from the
	// fields above, so it says neither.
	man string
}

// A group is the settings of one concept, shown together in --help.
type group struct {
	title    string
	settings []setting
}

// settings declares every flag of c, grouped by what it configures.
func settings(c *Config) []group {
	return []group{
		connectionSettings(c),
		lockSettings(c),
		supervisionSettings(c),
		monitoringSettings(c),
		configurationSettings(c),
		outputSettings(c),
		actionSettings(c),
	}
}
