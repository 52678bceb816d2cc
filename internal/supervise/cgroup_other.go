//go:build !linux

package supervise

import (
	"errors"
	"syscall"
)

// cgroup is Linux's: there is none here.
type cgroup struct{ dir string }

var errNameTaken = errors.New("cgroup name taken")

func jobCgroupParent(Options) (string, bool) { return "", false }
func newCgroupDir(string) string             { return "" }
func makeCgroup(string) (*cgroup, error)     { return nil, errors.ErrUnsupported }
func removeStaleIn(string, string)           {}
func (*cgroup) kill() error                  { return nil }
func (*cgroup) procs() []int                 { return nil }
func (*cgroup) remove()                      {}
func (*cgroup) startIn(*syscall.SysProcAttr) {}
