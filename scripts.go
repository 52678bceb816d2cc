package withlock

import _ "embed"

// The scripts are always sent with EVAL, never EVALSHA first: a one-shot
// process such as the CLI would otherwise pay an extra NOSCRIPT round trip,
// and Redis caches the compiled script by its digest either way.
var (
	//go:embed release.lua
	releaseScript string
	//go:embed extend.lua
	extendScript string
	//go:embed pttl.lua
	pttlScript string
	//go:embed acquire_fenced.lua
	acquireFencedScript string
	//go:embed claim.lua
	claimScript string
)
