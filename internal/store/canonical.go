package store

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JSON documents the stores keep (memory values, metadata, upstream
// configs) go through canonicalJSON before either store touches them. It
// validates a document in one pass over its bytes and writes its canonical
// form: the text PostgreSQL's jsonb gives back for it, compacted. Both
// stores keep and serve that form, so a value reads back byte for byte
// the same from either, and the size limits hold for what is stored and
// served, not only for the bytes received.
//
// jsonb's rendering, which the canonical form copies:
//   - no insignificant whitespace (jsonb_out adds a space after ',' and
//     ':', which pgstore compacts away);
//   - object members ordered by the byte length of their names, then by
//     their bytes (jsonb's lengthCompareJsonbStringValue);
//   - strings decoded and re-escaped as escape_json does: '"', '\\' and
//     \b \f \n \r \t as two-character escapes, other characters below
//     U+0020 as \u00xx (lower-case hex), everything else literal UTF-8;
//   - numbers as numeric_out writes them: the decimal form, no exponent,
//     with as many fraction digits as the input had after its decimal
//     point, less the exponent (1E2 is 100, 1.50 is 1.50, 1.5e-3 is
//     0.0015, 100e-2 is 1.00), and no sign on a zero (-0.0 is 0.0).
//
// What it refuses, where the stores would otherwise disagree or the
// stored form would outgrow the one received:
//   - numbers whose decimal form is longer than JSONLimits.MaxNumberLength
//     characters, or whose exponent is larger than that in magnitude:
//     jsonb writes 1e131071 out as 131,072 digits;
//   - \u0000 and unpaired UTF-16 surrogate escapes (PostgreSQL refuses
//     both; RFC 7493 §2.1 rules surrogates out of interoperable JSON);
//   - bytes that are not UTF-8 inside strings;
//   - objects with two members of the same name (jsonb silently keeps the
//     last one; RFC 7493 §2.3 forbids them);
//   - nesting deeper than JSONLimits.MaxDepth;
//   - a canonical form longer than JSONLimits.MaxBytes.

// JSONLimits bound a JSON document a store keeps.
type JSONLimits struct {
	// MaxBytes bounds the document as received and its canonical form.
	MaxBytes int
	// MaxDepth bounds the nesting of objects and arrays; a document that
	// is an object or array is at depth 1.
	MaxDepth int
	// MaxNumberLength bounds the characters of a number's canonical
	// (decimal) form and the magnitude of its exponent.
	MaxNumberLength int
}

// maxPathToken bounds each member name in a path an error reports
// (bytes); a longer one is cut, on a character boundary, and ends in "…".
const maxPathToken = 64

// canon is the state of one canonicalJSON call.
type canon struct {
	in    []byte
	pos   int
	out   []byte
	lim   JSONLimits
	field string
	// naming is set while a member name is read: what is wrong with it
	// is reported at the object.
	naming bool

	stack   []frame
	members []member // the members of every open object, outermost first
	keys    []byte   // decoded member names that had escapes

	// Small first buffers, so that documents of ordinary shape need no
	// more for the bookkeeping. (They live in the struct, which is one
	// allocation: appending through a pointer moves a local array to the
	// heap anyway.)
	stackBuf   [8]frame
	membersBuf [24]member
}

// frame is an open object or array.
type frame struct {
	object bool
	// index is, in an array, the position of the current element.
	index int
	// first is, in an object, the position in members of its first
	// member, and cur that of the current one.
	first, cur int
	// keys is len(canon.keys) when the object opened.
	keys int
	// start is, in an object, the offset in out just after its '{'.
	start int
}

// member is an object member: its decoded name (in the input when it had
// no escapes, else in canon.keys) and where `"name":value` lies in out.
type member struct {
	nameAt, nameLen int
	inKeys          bool
	start, end      int
}

// canonicalJSON validates doc against lim and returns its canonical form.
// Errors are *FieldErrors: on field itself for the document as a whole,
// on the RFC 6901 pointer "/<field>/…" of the offending value otherwise.
func canonicalJSON(field string, doc []byte, lim JSONLimits) ([]byte, error) {
	if len(doc) > lim.MaxBytes {
		return nil, Invalid(field, "is %d bytes; the limit is %d", len(doc), lim.MaxBytes)
	}
	c := &canon{in: doc, lim: lim, field: field, out: make([]byte, 0, len(doc))}
	c.stack, c.members = c.stackBuf[:0], c.membersBuf[:0]
	if err := c.document(); err != nil {
		// Errors about the document as a whole are made without the
		// field's name, which is filled in here.
		if fe, ok := err.(*FieldError); ok && fe.Field == "" {
			fe.Field = field
		}
		return nil, err
	}
	return c.out, nil
}

func (c *canon) document() error {
	c.skipSpace()
	if c.pos == len(c.in) {
		return Invalid("", "is required")
	}
	if err := c.value(); err != nil {
		return err
	}
	for len(c.stack) > 0 {
		c.skipSpace()
		if c.pos == len(c.in) {
			return c.syntax()
		}
		top := &c.stack[len(c.stack)-1]
		switch ch := c.in[c.pos]; {
		case ch == ',':
			c.pos++
			c.out = append(c.out, ',')
			c.skipSpace()
			if top.object {
				if err := c.member(top); err != nil {
					return err
				}
			} else {
				top.index++
			}
			if err := c.value(); err != nil {
				return err
			}
		case ch == '}' && top.object, ch == ']' && !top.object:
			c.pos++
			if err := c.close(); err != nil {
				return err
			}
		default:
			return c.syntax()
		}
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return c.syntax()
	}
	if len(c.out) > c.lim.MaxBytes {
		return c.tooLarge()
	}
	return nil
}

// value reads the value at pos. A scalar is read whole; a container is
// opened and value goes on into its first element or member, so that
// nesting needs no recursion. An empty container is closed at once.
func (c *canon) value() error {
	for {
		if c.pos == len(c.in) {
			return c.syntax()
		}
		switch ch := c.in[c.pos]; ch {
		case '{', '[':
			if len(c.stack) >= c.lim.MaxDepth {
				return c.invalid("is nested deeper than the limit of %d objects and arrays", c.lim.MaxDepth)
			}
			c.pos++
			c.out = append(c.out, ch)
			c.stack = append(c.stack, frame{object: ch == '{', first: len(c.members), keys: len(c.keys), start: len(c.out)})
			c.skipSpace()
			if c.pos == len(c.in) {
				return c.syntax()
			}
			if end := c.in[c.pos]; end == ch+2 { // '{'+2 is '}', '['+2 is ']'
				c.pos++
				return c.close()
			}
			if ch == '{' {
				if err := c.member(&c.stack[len(c.stack)-1]); err != nil {
					return err
				}
			}
		case '"':
			_, _, _, err := c.str(false)
			return err
		case 't':
			return c.literal("true")
		case 'f':
			return c.literal("false")
		case 'n':
			return c.literal("null")
		default:
			return c.number()
		}
	}
}

// member reads a member's name and the ':' after it, and records it.
func (c *canon) member(f *frame) error {
	if c.pos == len(c.in) || c.in[c.pos] != '"' {
		return c.syntax()
	}
	start := len(c.out)
	c.naming = true
	at, n, inKeys, err := c.str(true)
	c.naming = false
	if err != nil {
		return err
	}
	c.skipSpace()
	if c.pos == len(c.in) || c.in[c.pos] != ':' {
		return c.syntax()
	}
	c.pos++
	c.out = append(c.out, ':')
	c.skipSpace()
	f.cur = len(c.members)
	c.members = append(c.members, member{nameAt: at, nameLen: n, inKeys: inKeys, start: start})
	return nil
}

// close ends the innermost container, whose closing bracket was just
// read. An object's members are put in jsonb's order, and two of the same
// name are refused.
func (c *canon) close() error {
	f := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	if !f.object {
		c.out = append(c.out, ']')
		return nil
	}
	ms := c.members[f.first:]
	if len(ms) > 0 {
		// Each member ends where the next one's ',' is, the last one here.
		for i := range ms[:len(ms)-1] {
			ms[i].end = ms[i+1].start - 1
		}
		ms[len(ms)-1].end = len(c.out)
		if err := c.order(ms, f.start); err != nil {
			return err
		}
	}
	c.members = c.members[:f.first]
	c.keys = c.keys[:f.keys]
	c.out = append(c.out, '}')
	return nil
}

// order puts the members of the object whose text starts at start in
// jsonb's order, rewriting that text if they were not in it.
func (c *canon) order(ms []member, start int) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		switch c.compare(&ms[i-1], &ms[i]) {
		case 0:
			return c.duplicate(&ms[i])
		case 1:
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	slices.SortFunc(ms, func(a, b member) int { return c.compare(&a, &b) })
	for i := 1; i < len(ms); i++ {
		if c.compare(&ms[i-1], &ms[i]) == 0 {
			return c.duplicate(&ms[i])
		}
	}
	// Write the members in order after the object's text, then move
	// them over it: the output's spare capacity serves as the scratch.
	end := len(c.out)
	for i, m := range ms {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.out[m.start:m.end]...)
	}
	c.out = c.out[:start+copy(c.out[start:], c.out[end:])]
	return nil
}

// name returns a member's decoded name.
func (c *canon) name(m *member) []byte {
	if m.inKeys {
		return c.keys[m.nameAt : m.nameAt+m.nameLen]
	}
	return c.in[m.nameAt : m.nameAt+m.nameLen]
}

// compare orders member names as jsonb does: shorter first, then bytewise.
func (c *canon) compare(a, b *member) int {
	if a.nameLen != b.nameLen {
		if a.nameLen < b.nameLen {
			return -1
		}
		return 1
	}
	return bytes.Compare(c.name(a), c.name(b))
}

func (c *canon) duplicate(m *member) error {
	return Invalid(c.path(len(c.stack)), "has two members named %q", token(c.name(m)))
}

func (c *canon) literal(word string) error {
	if len(c.in)-c.pos < len(word) || string(c.in[c.pos:c.pos+len(word)]) != word {
		return c.syntax()
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

// str reads the string at pos and writes it re-escaped. For a member
// name (key) it returns where its decoded bytes are: in the input when
// the string had no escapes, else in c.keys.
func (c *canon) str(key bool) (at, n int, inKeys bool, err error) {
	in := c.in
	start := c.pos + 1
	c.out = append(c.out, '"')
	run := start // the bytes from run to i are copied as they are
	decoded := -1
	for i := start; ; {
		if i >= len(in) {
			return 0, 0, false, c.syntax()
		}
		b := in[i]
		switch {
		case b == '"':
			c.out = append(c.out, in[run:i]...)
			c.out = append(c.out, '"')
			c.pos = i + 1
			if decoded < 0 {
				return start, i - start, false, nil
			}
			c.keys = append(c.keys, in[run:i]...)
			return decoded, len(c.keys) - decoded, true, nil
		case b == '\\':
			c.out = append(c.out, in[run:i]...)
			if key {
				if decoded < 0 {
					decoded = len(c.keys)
				}
				c.keys = append(c.keys, in[run:i]...)
			}
			r, size, err := c.escape(i)
			if err != nil {
				return 0, 0, false, err
			}
			c.out = appendEscaped(c.out, r)
			if key {
				c.keys = utf8.AppendRune(c.keys, r)
			}
			i += size
			run = i
		case b < 0x20:
			return 0, 0, false, c.syntax()
		case b < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, false, c.badString("bytes that are not UTF-8")
			}
			i += size
		}
	}
}

// escape decodes the escape sequence at in[i] (a backslash) and returns
// the character and the length of the sequence.
func (c *canon) escape(i int) (rune, int, error) {
	in := c.in
	if i+1 >= len(in) {
		return 0, 0, c.syntax()
	}
	switch e := in[i+1]; {
	case e == '"' || e == '\\' || e == '/':
		return rune(e), 2, nil
	case e != 'u':
		if k := strings.IndexByte(shortLetters, e); k >= 0 {
			return rune(shortEscaped[k]), 2, nil
		}
		return 0, 0, c.syntax()
	}
	r := hex4(in, i+2)
	switch {
	case r < 0:
		return 0, 0, c.syntax()
	case r == 0:
		return 0, 0, c.badString(`\u0000 (NUL), which cannot be stored`)
	case 0xDC00 <= r && r < 0xE000:
		return 0, 0, c.unpaired(r)
	case r < 0xD800 || r >= 0xE000:
		return r, 6, nil
	}
	// A high surrogate: the low one must follow.
	if i+7 < len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
		if lo := hex4(in, i+8); 0xDC00 <= lo && lo < 0xE000 {
			return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, nil
		}
	}
	return 0, 0, c.unpaired(r)
}

func (c *canon) unpaired(r rune) error {
	return c.badString(fmt.Sprintf(`an unpaired UTF-16 surrogate (\u%04x), which cannot be stored`, r))
}

// badString reports a string, or a member name, containing what.
func (c *canon) badString(what string) error {
	if c.naming {
		return Invalid(c.path(len(c.stack)-1), "has a member name containing %s", what)
	}
	return c.invalid("is a string containing %s", what)
}

// The characters escape_json writes as a backslash and a letter, and
// those letters.
const (
	shortEscaped = "\b\f\n\r\t"
	shortLetters = "bfnrt"
)

// appendEscaped writes r as PostgreSQL's escape_json does.
func appendEscaped(out []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r))
	case r < 0x20:
		if k := strings.IndexByte(shortEscaped, byte(r)); k >= 0 {
			return append(out, '\\', shortLetters[k])
		}
		const hexDigits = "0123456789abcdef"
		return append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
	return utf8.AppendRune(out, r)
}

// hex4 decodes the four hex digits at in[i:], or returns -1.
func hex4(in []byte, i int) rune {
	var b [2]byte
	if i+4 > len(in) {
		return -1
	}
	if _, err := hex.Decode(b[:], in[i:i+4]); err != nil {
		return -1
	}
	return rune(b[0])<<8 | rune(b[1])
}

// maxExponent caps the exponent as it is read; anything beyond is
// refused, and the cap keeps the arithmetic far from overflowing.
const maxExponent = 1 << 30

// number reads the number at pos (RFC 8259 §6) and writes its decimal
// form, refusing one whose form or exponent exceeds MaxNumberLength.
func (c *canon) number() error {
	in := c.in
	start, i := c.pos, c.pos
	neg := i < len(in) && in[i] == '-'
	if neg {
		i++
	}
	intAt := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && '1' <= in[i] && in[i] <= '9':
		i = skipDigits(in, i)
	default:
		return c.syntax()
	}
	intEnd := i
	fracAt, fracEnd := i, i
	if i < len(in) && in[i] == '.' {
		fracAt = i + 1
		if fracEnd = skipDigits(in, fracAt); fracEnd == fracAt {
			return c.syntax()
		}
		i = fracEnd
	}
	exp, hasExp := 0, false
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		hasExp = true
		i++
		expNeg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			expNeg = in[i] == '-'
			i++
		}
		digits := i
		for ; i < len(in) && '0' <= in[i] && in[i] <= '9'; i++ {
			exp = min(exp*10+int(in[i]-'0'), maxExponent)
		}
		if i == digits {
			return c.syntax()
		}
		if expNeg {
			exp = -exp
		}
	}
	c.pos = i
	d := decimal{in: in, intAt: intAt, intEnd: intEnd, fracAt: fracAt, fracEnd: fracEnd}
	zero := d.zero()
	if !hasExp && !(neg && zero) {
		// Without an exponent, numeric_out writes what it was given.
		if n := i - start; n > c.lim.MaxNumberLength {
			return c.longNumber(n)
		}
		c.out = append(c.out, in[start:i]...)
		return c.grew()
	}
	if n := d.length(exp, neg && !zero); n > c.lim.MaxNumberLength {
		return c.longNumber(n)
	}
	if exp > c.lim.MaxNumberLength || -exp > c.lim.MaxNumberLength {
		return c.invalid("is a number with exponent %d; the limit is ±%d", exp, c.lim.MaxNumberLength)
	}
	c.out = d.append(c.out, exp, neg && !zero)
	return c.grew()
}

func (c *canon) longNumber(n int) error {
	return c.invalid("is a number whose decimal form (as it is stored) is %d characters long; the limit is %d", n, c.lim.MaxNumberLength)
}

// grew checks the size of the canonical form after a number, the only
// thing written longer than it was read.
func (c *canon) grew() error {
	if len(c.out) > c.lim.MaxBytes {
		return c.tooLarge()
	}
	return nil
}

func (c *canon) tooLarge() error {
	return Invalid("", "is longer than the limit of %d bytes as it is stored (numbers written out in full: 1e3 as 1000)", c.lim.MaxBytes)
}

func skipDigits(in []byte, i int) int {
	for i < len(in) && '0' <= in[i] && in[i] <= '9' {
		i++
	}
	return i
}

// decimal is a number's digits as written: the integer part in[intAt:intEnd]
// and the fraction in[fracAt:fracEnd]. Its value is the digit string
// D = integer‖fraction times 10^(exp - len(fraction)).
type decimal struct {
	in                             []byte
	intAt, intEnd, fracAt, fracEnd int
}

func (d decimal) ndigits() int { return d.intEnd - d.intAt + d.fracEnd - d.fracAt }

// digit returns the k-th digit of D.
func (d decimal) digit(k int) byte {
	if n := d.intEnd - d.intAt; k >= n {
		return d.in[d.fracAt+k-n]
	}
	return d.in[d.intAt+k]
}

// lead returns the number of leading zeros of D.
func (d decimal) lead() int {
	n := d.ndigits()
	k := 0
	for k < n && d.digit(k) == '0' {
		k++
	}
	return k
}

func (d decimal) zero() bool { return d.lead() == d.ndigits() }

// scale is the number of fraction digits numeric_out writes, possibly
// negative (then the value is an integer ending in -scale zeros).
func (d decimal) scale(exp int) int { return d.fracEnd - d.fracAt - exp }

// parts returns the number of leading zeros of D, the number of its
// significant digits (from the first non-zero one), how many of those
// come before the decimal point (ip; zero or less means the integer part
// is "0", and -ip zeros follow the point before them), and the scale.
func (d decimal) parts(exp int) (lead, sig, ip, scale int) {
	lead = d.lead()
	sig = d.ndigits() - lead
	scale = d.scale(exp)
	if sig > 0 {
		ip = sig - scale
	}
	return lead, sig, ip, scale
}

// length is the number of characters append writes.
func (d decimal) length(exp int, minus bool) int {
	_, _, ip, s := d.parts(exp)
	n := 0
	if minus {
		n++
	}
	if ip > 0 {
		n += ip
	} else {
		n++ // "0"
	}
	if s > 0 {
		n += 1 + s
	}
	return n
}

// append writes the decimal form: the integer part without leading zeros
// ("0" if none), then, if the scale is positive, '.' and exactly scale
// fraction digits.
func (d decimal) append(out []byte, exp int, minus bool) []byte {
	if minus {
		out = append(out, '-')
	}
	lead, sig, ip, s := d.parts(exp)
	if ip <= 0 {
		out = append(out, '0')
	} else {
		for k := range ip {
			if k < sig {
				out = append(out, d.digit(lead+k))
			} else {
				out = append(out, '0')
			}
		}
	}
	if s <= 0 {
		return out
	}
	out = append(out, '.')
	for k := range s {
		// Fraction digit k is digit ip+k of the significant digits; those
		// before the first one (ip+k < 0) are zeros.
		if j := ip + k; j >= 0 && j < sig {
			out = append(out, d.digit(lead+j))
		} else {
			out = append(out, '0')
		}
	}
	return out
}

// skipSpace moves past JSON's insignificant whitespace.
func (c *canon) skipSpace() {
	for c.pos < len(c.in) && strings.IndexByte(" \t\n\r", c.in[c.pos]) >= 0 {
		c.pos++
	}
}

func (c *canon) syntax() error {
	return Invalid("", "is not valid JSON (at byte %d)", c.pos)
}

// invalid reports the current value: the one the innermost frame is at,
// or the document itself.
func (c *canon) invalid(format string, args ...any) error {
	return Invalid(c.path(len(c.stack)), format, args...)
}

// path formats the RFC 6901 pointer, under "/<field>", of the current
// value of the first n frames (the document itself for n = 0). Member
// names longer than maxPathToken are cut.
func (c *canon) path(n int) string {
	b := make([]byte, 0, 64)
	b = append(append(b, '/'), c.field...)
	for _, f := range c.stack[:n] {
		b = append(b, '/')
		if !f.object {
			b = strconv.AppendInt(b, int64(f.index), 10)
			continue
		}
		// RFC 6901 §3: "~" is written "~0" and "/" "~1", in that order.
		tok := strings.ReplaceAll(token(c.name(&c.members[f.cur])), "~", "~0")
		b = append(b, strings.ReplaceAll(tok, "/", "~1")...)
	}
	return string(b)
}

// token returns name, cut to maxPathToken bytes on a character boundary
// and marked with "…" when longer.
func token(name []byte) string {
	if len(name) <= maxPathToken {
		return string(name)
	}
	cut := maxPathToken
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return string(name[:cut]) + "…"
}
