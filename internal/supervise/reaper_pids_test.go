package supervise

import (
	"slices"
	"testing"
	"unsafe"
)

// The kernel reads and writes these structs by their C layout: a field
// missing or of the wrong size would shift every later one.
func TestReaperStructsHaveTheLayoutOfSysProcctlH(t *testing.T) {
	ptr := unsafe.Sizeof(uintptr(0))
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"procctl_reaper_status", unsafe.Sizeof(reaperStatus{}), 5*4 + 15*4},
		{"procctl_reaper_status.rs_pid", unsafe.Offsetof(reaperStatus{}.Pid), 4 * 4},
		{"procctl_reaper_pidinfo", unsafe.Sizeof(reaperPidinfo{}), 3*4 + 15*4},
		{"procctl_reaper_pidinfo.pi_flags", unsafe.Offsetof(reaperPidinfo{}.Flags), 2 * 4},
		{"procctl_reaper_pids.rp_pids", unsafe.Offsetof(reaperPids{}.Pids), 16 * 4},
		{"procctl_reaper_pids", unsafe.Sizeof(reaperPids{}), 16*4 + ptr},
		{"procctl_reaper_kill", unsafe.Sizeof(reaperKill{}), 5*4 + 15*4},
		{"procctl_reaper_kill.rk_fpid", unsafe.Offsetof(reaperKill{}.Fpid), 4 * 4},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %d bytes, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// Of the reaper's list, the job is the command's subtree and only the
// entries the kernel filled; reapers inside it are named to be asked too.
func TestJobEntriesTakesTheCommandsSubtreeFromTheReapersList(t *testing.T) {
	const cmd, guard, other = 100, 90, 300
	valid := uint32(reaperPidinfoValid)
	list := []reaperPidinfo{
		{Pid: guard, Subtree: guard, Flags: valid | 0x2},             // the guard, started by with-lock
		{Pid: cmd, Subtree: cmd, Flags: valid | 0x2},                 // the command, a child of with-lock
		{Pid: 101, Subtree: cmd, Flags: valid},                       // its child
		{Pid: 102, Subtree: cmd, Flags: valid | 0x2},                 // a setsid orphan, re-parented to with-lock
		{Pid: 103, Subtree: cmd, Flags: valid | reaperPidinfoReaper}, // timeout(1), a reaper itself
		{Pid: other, Subtree: other, Flags: valid | 0x2},             // another job of the same process
		{}, {}, // room the kernel did not fill
	}
	tests := []struct {
		name        string
		list        []reaperPidinfo
		subtree     int32
		pids, reaps []int
	}{
		{"with-lock's own list", list, cmd, []int{cmd, 101, 102, 103}, []int{103}},
		{"a reaper inside the job: all of its list", list, 0, []int{guard, cmd, 101, 102, 103, other}, []int{103}},
		{"only the command, after the others were reaped", list[1:2], cmd, []int{cmd}, nil},
		{"the command reaped, nothing left", []reaperPidinfo{list[0], {}}, cmd, nil, nil},
		{"an empty answer", make([]reaperPidinfo, 4), cmd, nil, nil},
		{"an entry not filled, though its pid is", []reaperPidinfo{{Pid: cmd, Subtree: cmd}}, cmd, nil, nil},
	}
	for _, tt := range tests {
		pids, reaps := jobEntries(tt.list, tt.subtree)
		if !slices.Equal(pids, tt.pids) || !slices.Equal(reaps, tt.reaps) {
			t.Errorf("%s: pids %v, reapers %v; want %v, %v", tt.name, pids, reaps, tt.pids, tt.reaps)
		}
	}
}

// An answer that filled every entry may have been cut short.
func TestListFullWhenTheKernelFilledEveryEntry(t *testing.T) {
	valid := reaperPidinfo{Pid: 1, Flags: reaperPidinfoValid}
	tests := []struct {
		name string
		list []reaperPidinfo
		want bool
	}{
		{"every entry filled", []reaperPidinfo{valid, valid}, true},
		{"room left", []reaperPidinfo{valid, {}}, false},
		{"nothing filled", make([]reaperPidinfo, 3), false},
		{"no room at all", nil, false},
	}
	for _, tt := range tests {
		if got := listFull(tt.list); got != tt.want {
			t.Errorf("%s: listFull = %v, want %v", tt.name, got, tt.want)
		}
	}
}
