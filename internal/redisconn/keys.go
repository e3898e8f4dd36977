package redisconn

import "strings"

// Keys names the keys and channels of one deployment: every name starts
// with its prefix (deployments may share a Redis, each under its own).
//
// A script or transaction touching several keys must keep them in one
// cluster slot, or Redis Cluster refuses it (CROSSSLOT). Redis hashes only
// the part of a key between the first "{" and the next "}" when there is
// one, so the keys of one thing share a hash tag: Tagged(id, ...) puts id
// in braces. The prefix itself never holds braces (redis.keyPrefix is
// validated so), so the tag is always the first.
type Keys struct{ prefix string }

// NewKeys returns the names under prefix.
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// Prefix is the deployment's prefix.
func (k Keys) Prefix() string { return k.prefix }

// Key joins parts with ":" after the prefix: a key that stands alone.
func (k Keys) Key(parts ...string) string {
	return k.prefix + strings.Join(parts, ":")
}

// Tagged is a key of the group tag: kind, then "{tag}", then the rest of
// parts, joined with ":". Every key of one group hashes to one slot. The
// tag is written with '{', '}' and '%' escaped (%7B, %7D, %25) and an
// empty tag as "%": a brace inside it, or an empty "{}", would make Redis
// hash another part of the key, and the group's keys would scatter.
func (k Keys) Tagged(kind, tag string, parts ...string) string {
	var b strings.Builder
	b.Grow(len(k.prefix) + len(kind) + len(tag) + 3 + 8*len(parts))
	b.WriteString(k.prefix)
	b.WriteString(kind)
	b.WriteString(":{")
	if tag == "" {
		b.WriteByte('%')
	}
	for i := 0; i < len(tag); i++ {
		switch c := tag[i]; c {
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('}')
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// Slot is the cluster hash slot of key (CRC16 of its hash tag, or of the
// whole key without one, modulo 16384), as Redis Cluster computes it; the
// tests use it to prove that a group's keys share one.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum
// Redis Cluster specifies for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
