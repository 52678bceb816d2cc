package withlock

import "testing"

// TestBackendCapabilities checks that each backend has exactly the optional
// capabilities it should: in particular that a semaphore, whose keys are
// slots, never picks up a plain lock's hand-over or once-per marker, which
// would act on the name's key instead of a slot.
func TestBackendCapabilities(t *testing.T) {
	has := func(b backend) map[string]bool {
		_, admin := b.(adminBackend)
		_, index := b.(indexKeeper)
		_, marker := b.(windowMarker)
		_, slots := b.(slotted)
		_, line := b.(fairLine)
		_, handOver := b.(handOverer)
		_, teller := b.(breakTeller)
		return map[string]bool{"admin": admin, "index": index, "marker": marker, "slots": slots,
			"line": line, "handOver": handOver, "breakTeller": teller}
	}
	for _, tc := range []struct {
		name string
		b    backend
		want []string
	}{
		{"single", &single{}, []string{"admin", "index", "marker", "line", "handOver", "breakTeller"}},
		{"semaphore", &semaphore{one: &single{}, n: 2}, []string{"admin", "index", "slots", "line", "breakTeller"}},
		{"quorum", &quorum{}, []string{"admin", "breakTeller"}},
	} {
		got := has(tc.b)
		for _, c := range tc.want {
			if !got[c] {
				t.Errorf("%s lacks %s", tc.name, c)
			}
			delete(got, c)
		}
		for c, ok := range got {
			if ok {
				t.Errorf("%s has %s, which it must not", tc.name, c)
			}
		}
	}
	if n := slotsPer(&semaphore{one: &single{}, n: 3}); n != 3 {
		t.Errorf("slotsPer(semaphore of 3) = %d", n)
	}
	if n := slotsPer(&single{}); n != 1 {
		t.Errorf("slotsPer(single) = %d", n)
	}
}
