package serverinfo

import "testing"

func TestEvictingPolicyNeedsAMaxmemoryAndAPolicyThatEvicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		info, want string
	}{
		{"# Memory\r\nmaxmemory:1048576\r\nmaxmemory_policy:allkeys-lru\r\n", "allkeys-lru"},
		{"maxmemory:1048576\r\nmaxmemory_policy:volatile-ttl\r\n", "volatile-ttl"},
		{"maxmemory:1048576\r\nmaxmemory_policy:noeviction\r\n", ""},
		{"maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n", ""},
		{"maxmemory_policy:allkeys-lru\r\n", ""}, // INFO without the memory section
		{"", ""},
	} {
		if got := EvictingPolicy(tc.info); got != tc.want {
			t.Errorf("EvictingPolicy(%q) = %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestFieldsSkipsHeadersAndBlankLines(t *testing.T) {
	t.Parallel()
	f := Fields("# Server\r\nredis_version:7.0.15\r\n\r\n# Replication\r\nslave0:ip=127.0.0.1,port=6380,state=online\r\n")
	if len(f) != 2 || f["redis_version"] != "7.0.15" || f["slave0"] != "ip=127.0.0.1,port=6380,state=online" {
		t.Errorf("Fields = %v", f)
	}
}
