//go:build !linux

package supervise

// setComm does nothing here: ps shows argv0, GuardName.
func setComm(string) {}
