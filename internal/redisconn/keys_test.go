package redisconn

import "testing"

// Slot agrees with Redis Cluster's own examples (cluster specification,
// "Keys hash tags"), and every key of a tagged group lands in one slot
// whatever else the names hold.
func TestSlot(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
		{"{user1000}.following", Slot("user1000")},
		{"foo{}{bar}", Slot("foo{}{bar}")}, // an empty tag: the whole key
		{"foo{{bar}}zap", Slot("{bar")},
		{"foo{bar}{zap}", Slot("bar")},
	}
	for _, tt := range tests {
		if got := Slot(tt.key); got != tt.want {
			t.Errorf("Slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestTaggedKeysShareASlot(t *testing.T) {
	k := NewKeys("mcp-runtime:")
	for _, id := range []string{"s1", "0b3f5c2e-9d7a-4a55-8f0e-2f2d7c1d9a10", "a:b", "x}y", "}", "", "{", "{}", "%7D"} {
		group := []string{
			k.Tagged("session", id), k.Tagged("session", id, "log"),
			k.Tagged("session", id, "stream", "7", "events"), k.Tagged("session", id, "home"),
		}
		for _, key := range group[1:] {
			if Slot(key) != Slot(group[0]) {
				t.Errorf("%q is in slot %d, %q in %d", key, Slot(key), group[0], Slot(group[0]))
			}
		}
	}
	if got, want := k.Tagged("session", "s1", "log"), "mcp-runtime:session:{s1}:log"; got != want {
		t.Errorf("Tagged = %q, want %q", got, want)
	}
	// Escaping keeps distinct tags distinct.
	seen := map[string]string{}
	for _, id := range []string{"", "%", "}", "%7D", "{", "%7B", "%25"} {
		key := k.Tagged("session", id)
		if other, dup := seen[key]; dup {
			t.Errorf("tags %q and %q both give %q", id, other, key)
		}
		seen[key] = id
	}
	if got, want := k.Key("rl", "tenant", "7"), "mcp-runtime:rl:tenant:7"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}
