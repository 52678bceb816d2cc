//go:build !linux

package supervise

import (
	"errors"
	"syscall"
)

// cgroup is Linux's: there is none here.
type cgroup struct{ dir string }

var errNameTaken = errors.New("cgroup name taken")

// choosePlacement has nothing to choose from here.
func choosePlacement(Options) placement { return placement{} }

// busConn is Linux's: there is no systemd here.
type busConn struct{}

func (*busConn) Close() error { return nil }

func (p *Prepared) startScope() *cgroup      { return nil }
func newCgroupDir(string) string             { return "" }
func makeCgroup(string) (*cgroup, error)     { return nil, errors.ErrUnsupported }
func removeStaleIn(string, string)           {}
func (*cgroup) kill() error                  { return nil }
func (*cgroup) procs() []int                 { return nil }
func (*cgroup) remove()                      {}
func (*cgroup) startIn(*syscall.SysProcAttr) {}
func removeStaleScopes(string)               {}
