package supervise

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setComm names this process for ps and top (its comm; the kernel keeps
// 15 bytes).
func setComm(name string) {
	b := append([]byte(name), 0)
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0)
}
