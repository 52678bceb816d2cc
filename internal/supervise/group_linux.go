package supervise

import (
	"os"
	"strconv"
	"strings"
)

// groupHasLiveProcess reports whether /proc lists a process of the
// child's group that has not exited. If /proc cannot be read, it assumes
// one.
func (c *Child) groupHasLiveProcess() bool {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if state, _, pgrp, ok := parseStat(string(stat)); ok && pgrp == c.pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat returns the state, parent and process group of a
// /proc/<pid>/stat line: "pid (comm) state ppid pgrp ...", where comm may
// hold anything.
func parseStat(stat string) (state byte, ppid, pgrp int, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return f[0][0], ppid, pgrp, err1 == nil && err2 == nil
}
