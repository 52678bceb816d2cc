package supervise

// FreeBSD's reaper (procctl(2), job_freebsd.go) answers in the structs of
// <sys/procctl.h>, laid out here field for field (pid_t is int32, u_int is
// uint32, each rs_pad0/pi_pad0/rp_pad0/rk_pad0 is [15]uint32). They and the
// logic that reads them build on every system, so that the tests check
// them where CI runs, on Linux; only job_freebsd.go hands them to the
// kernel.

// reaperStatus is struct procctl_reaper_status (PROC_REAP_STATUS).
type reaperStatus struct {
	Flags       uint32 // reaperStatusOwned: the process asked is a reaper itself
	Children    uint32 // of its reaper's list, those whose parent is the reaper
	Descendants uint32 // the whole list: every process the reaper will be given
	Reaper      int32
	Pid         int32
	_           [15]uint32
}

// reaperPidinfo is struct procctl_reaper_pidinfo, one process of a
// reaper's list (PROC_REAP_GETPIDS).
type reaperPidinfo struct {
	Pid     int32
	Subtree int32 // the pid of the reaper's child it descends from
	Flags   uint32
	_       [15]uint32
}

// reaperPids is struct procctl_reaper_pids: where PROC_REAP_GETPIDS
// writes at most Count entries.
type reaperPids struct {
	Count uint32
	_     [15]uint32
	Pids  *reaperPidinfo
}

// reaperKill is struct procctl_reaper_kill (PROC_REAP_KILL).
type reaperKill struct {
	Sig     int32
	Flags   uint32 // reaperKillSubtree: only Subtree's processes
	Subtree int32
	Killed  uint32 // out: how many were signalled
	Fpid    int32  // out: the first that could not be, or -1
	_       [15]uint32
}

const (
	reaperStatusOwned   = 0x1 // REAPER_STATUS_OWNED
	reaperPidinfoValid  = 0x1 // REAPER_PIDINFO_VALID
	reaperPidinfoReaper = 0x4 // REAPER_PIDINFO_REAPER
	reaperKillSubtree   = 0x2 // REAPER_KILL_SUBTREE
)

// jobEntries picks the job's processes out of a PROC_REAP_GETPIDS answer.
// The kernel fills as many entries as it has processes and leaves the rest
// of the buffer zero: only those flagged valid count. Of with-lock's own
// list the job is the subtree of the command — every process descending
// from it keeps the command's pid as its subtree, wherever it is
// re-parented — which leaves out the guard and anything else with-lock
// started; subtree 0 takes the whole list, as for a reaper inside the job.
// Such a reaper's descendants are on its own list, not on with-lock's:
// reapers names the entries that are reapers, to be asked in turn.
func jobEntries(list []reaperPidinfo, subtree int32) (pids, reapers []int) {
	for _, e := range list {
		if e.Flags&reaperPidinfoValid == 0 || (subtree != 0 && e.Subtree != subtree) {
			continue
		}
		pids = append(pids, int(e.Pid))
		if e.Flags&reaperPidinfoReaper != 0 {
			reapers = append(reapers, int(e.Pid))
		}
	}
	return pids, reapers
}

// listFull reports whether every entry of a PROC_REAP_GETPIDS answer was
// filled: the list may then have had more, and is asked again with room
// for them.
func listFull(list []reaperPidinfo) bool {
	return len(list) > 0 && list[len(list)-1].Flags&reaperPidinfoValid != 0
}
