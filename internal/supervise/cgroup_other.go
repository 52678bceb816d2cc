//go:build !linux

package supervise

import "syscall"

// cgroup is Linux's: there is none here.
type cgroup struct{ dir string }

func jobCgroupDir(Options) (string, bool)    { return "", false }
func makeCgroup(string) *cgroup              { return nil }
func (*cgroup) kill() error                  { return nil }
func (*cgroup) procs() []int                 { return nil }
func (*cgroup) closeFd()                     {}
func (*cgroup) remove()                      {}
func (*cgroup) startIn(*syscall.SysProcAttr) {}
