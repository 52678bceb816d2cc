package supervise

import (
	"encoding/binary"
	"os"
	"strconv"
	"testing"
)

// A scope's name is with-lock-<name>-<pid>.scope with the lock's name
// escaped as systemd-escape does (any byte but letters, digits, ':', '_',
// '.' and '-' as \xNN), cut short where long; a retry after a name was
// taken adds random hex. Its slice is the calling unit's.
func TestScopeNamesAndSlices(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	for _, tc := range []struct{ name, want string }{
		{"nightly-report", "with-lock-nightly-report-" + pid + ".scope"},
		{"a/b c", `with-lock-a\x2fb\x20c-` + pid + ".scope"},
		{"v1.2:x_y", "with-lock-v1.2:x_y-" + pid + ".scope"},
	} {
		if got := (scopeRequest{name: tc.name}).unitName(0); got != tc.want {
			t.Errorf("unitName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	long := (scopeRequest{name: string(make([]byte, 300))}).unitName(0)
	if len(long) > 255 {
		t.Errorf("a long name's unit is %d bytes, more than systemd takes", len(long))
	}
	if a, b := (scopeRequest{name: "x"}).unitName(1), (scopeRequest{name: "x"}).unitName(1); a == b || len(a) <= len("with-lock-x-"+pid+".scope") {
		t.Errorf("retries named %q and %q, want distinct names with random hex", a, b)
	}
	for path, want := range map[string]string{
		"/system.slice/cron.service":                         "system.slice",
		"/user.slice/user-1000.slice/session-3.scope":        "user-1000.slice",
		"/user.slice/user-1000.slice/user@1000.service/init": "",
		"/": "",
	} {
		if got := sliceOf(path); got != want {
			t.Errorf("sliceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// The message StartTransientUnit is sent with decodes as D-Bus says: the
// header's fields, and the body's unit name, first.
func TestStartTransientUnitBodyStartsWithTheUnitName(t *testing.T) {
	body := (scopeRequest{name: "x", description: "d", pid: 42, slice: "system.slice",
		limits: Limits{MemoryMax: 64 << 20, CPUQuotaPercent: 50}}).body("with-lock-x-1.scope")
	d := busDec{b: body, order: binary.LittleEndian}
	if unit, mode := d.str(), d.str(); d.err != nil || unit != "with-lock-x-1.scope" || mode != "fail" {
		t.Errorf("body starts %q %q (%v), want the unit's name and mode fail", unit, mode, d.err)
	}
	if len(body)%4 != 0 {
		t.Errorf("the body ends with an empty array, 4-aligned; it is %d bytes", len(body))
	}
}
