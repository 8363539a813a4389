// Package sf is a bounded parser for the RFC 8941 structured field values the
// IETF RateLimit fields are written in (Lists and, for the draft-07 form,
// Dictionaries), with the RFC 9651 Date and Display String bare items
// accepted so that newer servers do not make a field malformed. It keeps only
// what the rate-limit fields need (a member's name or number and the
// parameters q, qu, w, r and t) and allocates nothing: strings are slices of
// the input, kept in their escaped form (see Value.Raw).
package sf

import (
	"strings"

	"github.com/headgate-go/headgate/core/internal/ascii"
)

// MaxMembers bounds the members of a List or Dictionary, the items of an
// inner list and the parameters of one item. A field over any bound is
// treated as malformed, so a hostile field costs one pass over its bytes.
const MaxMembers = 32

// Kind is the type of a bare item.
type Kind uint8

const (
	Absent Kind = iota
	Integer
	Decimal
	String
	Token
	Other // byte sequence, boolean, date, display string, inner list
)

// Value is a bare item. For strings, Raw is the text between the quotes
// still escaped: RFC 8941 allows only \" and \\ and requires them, so two
// strings are equal exactly when their raw forms are, and a token equals a
// string when its text equals the string's raw form. For numbers, Milli is
// the value times 1000 (an Integer has at most 15 digits and a Decimal at
// most 3 fraction digits, so it always fits).
type Value struct {
	Kind  Kind
	Raw   string
	Milli int64
}

// The parameters kept, as indexes into Member.Params.
const (
	ParamQ  = iota // RateLimit-Policy: quota
	ParamQU        // RateLimit-Policy: quota unit
	ParamW         // RateLimit-Policy: window, seconds
	ParamR         // RateLimit: remaining
	ParamT         // RateLimit: seconds until reset
	ParamCount
)

// Member is a List member or Dictionary member: Key is empty in a List.
type Member struct {
	Key    string
	Value  Value
	Params [ParamCount]Value
}

// parser reads one field value.
type parser struct {
	s string
	i int
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// ows skips optional white space. RFC 8941 allows only SP in most places;
// tabs are accepted too, as HTTP's OWS.
func (p *parser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) sp() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// ParseList parses s as a List into members and returns how many there
// were; ok is false when s is not a valid List or has too many members.
func ParseList(s string, members *[MaxMembers]Member) (n int, ok bool) {
	p := parser{s: s}
	return p.members(members, false)
}

// ParseDict parses s as a Dictionary, as ParseList does a List. A
// repeated key is kept twice, in order; the caller lets the last one win.
func ParseDict(s string, members *[MaxMembers]Member) (n int, ok bool) {
	p := parser{s: s}
	return p.members(members, true)
}

func (p *parser) members(members *[MaxMembers]Member, dict bool) (int, bool) {
	p.ows()
	n := 0
	for p.i < len(p.s) {
		if n == len(members) {
			return 0, false
		}
		m := &members[n]
		*m = Member{}
		if dict {
			k, ok := p.key()
			if !ok {
				return 0, false
			}
			m.Key = k
			if p.peek() == '=' {
				p.i++
				if !p.itemOrInnerList(m) {
					return 0, false
				}
			} else {
				m.Value = Value{Kind: Other} // Boolean true
				if !p.params(m) {
					return 0, false
				}
			}
		} else if !p.itemOrInnerList(m) {
			return 0, false
		}
		n++
		p.ows()
		if p.i == len(p.s) {
			break
		}
		if p.s[p.i] != ',' {
			return 0, false
		}
		p.i++
		p.ows()
		if p.i == len(p.s) {
			return 0, false // a trailing comma
		}
	}
	return n, true
}

// itemOrInnerList parses an Item or an Inner List (whose items are checked
// and dropped: the rate-limit fields have no use for them) with its parameters.
func (p *parser) itemOrInnerList(m *Member) bool {
	if p.peek() != '(' {
		return p.bareItem(&m.Value) && p.params(m)
	}
	p.i++
	for count := 0; ; count++ {
		p.sp()
		if p.peek() == ')' {
			p.i++
			m.Value = Value{Kind: Other}
			return p.params(m)
		}
		if count == MaxMembers {
			return false
		}
		var inner Member
		if !p.bareItem(&inner.Value) || !p.params(&inner) {
			return false
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// params parses the parameters of an item, keeping the ones listed
// by the Param constants. A repeated key overwrites the earlier value, as
// RFC 8941 says.
func (p *parser) params(m *Member) bool {
	for count := 0; p.peek() == ';'; count++ {
		if count == MaxMembers {
			return false
		}
		p.i++
		p.sp()
		k, ok := p.key()
		if !ok {
			return false
		}
		v := Value{Kind: Other} // Boolean true
		if p.peek() == '=' {
			p.i++
			if !p.bareItem(&v) {
				return false
			}
		}
		switch k {
		case "q":
			m.Params[ParamQ] = v
		case "qu":
			m.Params[ParamQU] = v
		case "w":
			m.Params[ParamW] = v
		case "r":
			m.Params[ParamR] = v
		case "t":
			m.Params[ParamT] = v
		}
	}
	return true
}

// key parses a key:
//
//	( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
func (p *parser) key() (string, bool) {
	j := p.i
	if c := p.peek(); !('a' <= c && c <= 'z' || c == '*') {
		return "", false
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !('a' <= c && c <= 'z' || ascii.IsDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[j:p.i], true
}

// bareItem parses a bare item into v.
func (p *parser) bareItem(v *Value) bool {
	switch c := p.peek(); {
	case c == '-' || ascii.IsDigit(c):
		return p.number(v)
	case c == '"':
		return p.str(v)
	case ascii.IsAlpha(c) || c == '*':
		j := p.i
		p.i++
		for p.i < len(p.s) && (tchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		*v = Value{Kind: Token, Raw: p.s[j:p.i]}
		return true
	case c == ':': // Byte Sequence
		p.i++
		for p.i < len(p.s) && p.s[p.i] != ':' {
			if c := p.s[p.i]; !(ascii.IsAlpha(c) || ascii.IsDigit(c) || c == '+' || c == '/' || c == '=') {
				return false
			}
			p.i++
		}
		if p.i == len(p.s) {
			return false
		}
		p.i++
		*v = Value{Kind: Other}
		return true
	case c == '?': // Boolean
		if p.i+1 >= len(p.s) || (p.s[p.i+1] != '0' && p.s[p.i+1] != '1') {
			return false
		}
		p.i += 2
		*v = Value{Kind: Other}
		return true
	case c == '@': // Date (RFC 9651)
		p.i++
		var n Value
		if !p.number(&n) || n.Kind != Integer {
			return false
		}
		*v = Value{Kind: Other}
		return true
	case c == '%': // Display String (RFC 9651)
		p.i++
		if p.peek() != '"' {
			return false
		}
		for p.i++; p.i < len(p.s); p.i++ {
			switch c := p.s[p.i]; {
			case c == '"':
				p.i++
				*v = Value{Kind: Other}
				return true
			case c == '%':
				if p.i+2 >= len(p.s) || !lowerHex(p.s[p.i+1]) || !lowerHex(p.s[p.i+2]) {
					return false
				}
				p.i += 2
			case c < 0x20 || c > 0x7e:
				return false
			}
		}
		return false
	}
	return false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits); anything longer is malformed, as RFC 8941
// says.
func (p *parser) number(v *Value) bool {
	neg := false
	if p.peek() == '-' {
		neg = true
		p.i++
	}
	var ip, frac int64
	intDigits, fracDigits, decimal := 0, 0, false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case ascii.IsDigit(c) && !decimal:
			if intDigits == 15 {
				return false
			}
			ip = ip*10 + int64(c-'0')
			intDigits++
		case ascii.IsDigit(c):
			if fracDigits == 3 {
				return false
			}
			frac = frac*10 + int64(c-'0')
			fracDigits++
		case c == '.' && !decimal:
			if intDigits == 0 || intDigits > 12 {
				return false
			}
			decimal = true
		default:
			goto done
		}
		p.i++
	}
done:
	if intDigits == 0 || decimal && fracDigits == 0 {
		return false
	}
	for range 3 - fracDigits {
		frac *= 10
	}
	milli := ip*1000 + frac
	if neg {
		milli = -milli
	}
	kind := Integer
	if decimal {
		kind = Decimal
	}
	*v = Value{Kind: kind, Milli: milli}
	return true
}

// str parses a String: printable ASCII between quotes, with \" and \\ the
// only escapes.
func (p *parser) str(v *Value) bool {
	p.i++
	j := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\':
			if p.i+1 >= len(p.s) || (p.s[p.i+1] != '"' && p.s[p.i+1] != '\\') {
				return false
			}
			p.i += 2
		case c == '"':
			*v = Value{Kind: String, Raw: p.s[j:p.i]}
			p.i++
			return true
		case c < 0x20 || c > 0x7e:
			return false
		default:
			p.i++
		}
	}
	return false
}

// tchar reports whether c is an HTTP tchar.
func tchar(c byte) bool {
	if ascii.IsAlpha(c) || ascii.IsDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func lowerHex(c byte) bool { return ascii.IsDigit(c) || 'a' <= c && c <= 'f' }

// Unescape returns the text of a raw String: the input itself when it
// holds no escape (the usual case, no allocation).
func Unescape(raw string) string {
	k := 0
	for k < len(raw) && raw[k] != '\\' {
		k++
	}
	if k == len(raw) {
		return raw
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b = append(b, raw[i])
	}
	return string(b)
}

// JoinLines joins the lines of a structured field with ", ", as RFC 8941
// section 4.2 says; a field sent on one line (the usual case) is used as is.
// More lines than MaxMembers make the field malformed.
func JoinLines(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	if len(lines) > MaxMembers {
		return "(" // more lines than members: malformed
	}
	return strings.Join(lines, ", ")
}
