package core

// A bounded parser for the RFC 8941 structured field values the IETF
// RateLimit fields are written in (Lists and, for the draft-07 form,
// Dictionaries), with the RFC 9651 Date and Display String bare items
// accepted so that newer servers do not make a field malformed. It keeps only
// what ParseFeedback reads (the member's name or number and the parameters q,
// qu, w, r and t) and allocates nothing: strings are slices of the input,
// kept in their escaped form (see sfValue.raw).

// sfMaxMembers bounds the members of a List or Dictionary, the items of an
// inner list and the parameters of one item. A field over any bound is
// treated as malformed, so a hostile field costs one pass over its bytes.
const sfMaxMembers = 32

// sfKind is the type of a bare item.
type sfKind uint8

const (
	sfAbsent sfKind = iota
	sfInteger
	sfDecimal
	sfString
	sfToken
	sfOther // byte sequence, boolean, date, display string, inner list
)

// sfValue is a bare item. For strings, raw is the text between the quotes
// still escaped: RFC 8941 allows only \" and \\ and requires them, so two
// strings are equal exactly when their raw forms are, and a token equals a
// string when its text equals the string's raw form. For numbers, milli is
// the value times 1000 (an Integer has at most 15 digits and a Decimal at
// most 3 fraction digits, so it always fits).
type sfValue struct {
	kind  sfKind
	raw   string
	milli int64
}

// The parameters ParseFeedback reads.
const (
	sfParamQ  = iota // RateLimit-Policy: quota
	sfParamQU        // RateLimit-Policy: quota unit
	sfParamW         // RateLimit-Policy: window, seconds
	sfParamR         // RateLimit: remaining
	sfParamT         // RateLimit: seconds until reset
	sfParamCount
)

// sfMember is a List member or Dictionary member: key is empty in a List.
type sfMember struct {
	key    string
	value  sfValue
	params [sfParamCount]sfValue
}

// sfParser reads one field value.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// ows skips optional white space. RFC 8941 allows only SP in most places;
// tabs are accepted too, as HTTP's OWS.
func (p *sfParser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) sp() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// parseSFList parses s as a List into members and returns how many there
// were; ok is false when s is not a valid List or has too many members.
func parseSFList(s string, members *[sfMaxMembers]sfMember) (n int, ok bool) {
	p := sfParser{s: s}
	return p.members(members, false)
}

// parseSFDict parses s as a Dictionary, as parseSFList does a List. A
// repeated key is kept twice, in order; the caller lets the last one win.
func parseSFDict(s string, members *[sfMaxMembers]sfMember) (n int, ok bool) {
	p := sfParser{s: s}
	return p.members(members, true)
}

func (p *sfParser) members(members *[sfMaxMembers]sfMember, dict bool) (int, bool) {
	p.ows()
	n := 0
	for p.i < len(p.s) {
		if n == len(members) {
			return 0, false
		}
		m := &members[n]
		*m = sfMember{}
		if dict {
			k, ok := p.key()
			if !ok {
				return 0, false
			}
			m.key = k
			if p.peek() == '=' {
				p.i++
				if !p.itemOrInnerList(m) {
					return 0, false
				}
			} else {
				m.value = sfValue{kind: sfOther} // Boolean true
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
// and dropped: ParseFeedback has no use for them) with its parameters.
func (p *sfParser) itemOrInnerList(m *sfMember) bool {
	if p.peek() != '(' {
		return p.bareItem(&m.value) && p.params(m)
	}
	p.i++
	for count := 0; ; count++ {
		p.sp()
		if p.peek() == ')' {
			p.i++
			m.value = sfValue{kind: sfOther}
			return p.params(m)
		}
		if count == sfMaxMembers {
			return false
		}
		var inner sfMember
		if !p.bareItem(&inner.value) || !p.params(&inner) {
			return false
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// params parses the parameters of an item, keeping the ones ParseFeedback
// reads. A repeated key overwrites the earlier value, as RFC 8941 says.
func (p *sfParser) params(m *sfMember) bool {
	for count := 0; p.peek() == ';'; count++ {
		if count == sfMaxMembers {
			return false
		}
		p.i++
		p.sp()
		k, ok := p.key()
		if !ok {
			return false
		}
		v := sfValue{kind: sfOther} // Boolean true
		if p.peek() == '=' {
			p.i++
			if !p.bareItem(&v) {
				return false
			}
		}
		switch k {
		case "q":
			m.params[sfParamQ] = v
		case "qu":
			m.params[sfParamQU] = v
		case "w":
			m.params[sfParamW] = v
		case "r":
			m.params[sfParamR] = v
		case "t":
			m.params[sfParamT] = v
		}
	}
	return true
}

// key parses a key:
//
//	( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
func (p *sfParser) key() (string, bool) {
	j := p.i
	if c := p.peek(); !('a' <= c && c <= 'z' || c == '*') {
		return "", false
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !('a' <= c && c <= 'z' || feedbackIsDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[j:p.i], true
}

// bareItem parses a bare item into v.
func (p *sfParser) bareItem(v *sfValue) bool {
	switch c := p.peek(); {
	case c == '-' || feedbackIsDigit(c):
		return p.number(v)
	case c == '"':
		return p.str(v)
	case feedbackIsAlpha(c) || c == '*':
		j := p.i
		p.i++
		for p.i < len(p.s) && (sfTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		*v = sfValue{kind: sfToken, raw: p.s[j:p.i]}
		return true
	case c == ':': // Byte Sequence
		p.i++
		for p.i < len(p.s) && p.s[p.i] != ':' {
			if c := p.s[p.i]; !(feedbackIsAlpha(c) || feedbackIsDigit(c) || c == '+' || c == '/' || c == '=') {
				return false
			}
			p.i++
		}
		if p.i == len(p.s) {
			return false
		}
		p.i++
		*v = sfValue{kind: sfOther}
		return true
	case c == '?': // Boolean
		if p.i+1 >= len(p.s) || (p.s[p.i+1] != '0' && p.s[p.i+1] != '1') {
			return false
		}
		p.i += 2
		*v = sfValue{kind: sfOther}
		return true
	case c == '@': // Date (RFC 9651)
		p.i++
		var n sfValue
		if !p.number(&n) || n.kind != sfInteger {
			return false
		}
		*v = sfValue{kind: sfOther}
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
				*v = sfValue{kind: sfOther}
				return true
			case c == '%':
				if p.i+2 >= len(p.s) || !sfLowerHex(p.s[p.i+1]) || !sfLowerHex(p.s[p.i+2]) {
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
func (p *sfParser) number(v *sfValue) bool {
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
		case feedbackIsDigit(c) && !decimal:
			if intDigits == 15 {
				return false
			}
			ip = ip*10 + int64(c-'0')
			intDigits++
		case feedbackIsDigit(c):
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
	kind := sfInteger
	if decimal {
		kind = sfDecimal
	}
	*v = sfValue{kind: kind, milli: milli}
	return true
}

// str parses a String: printable ASCII between quotes, with \" and \\ the
// only escapes.
func (p *sfParser) str(v *sfValue) bool {
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
			*v = sfValue{kind: sfString, raw: p.s[j:p.i]}
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

// sfTchar reports whether c is an HTTP tchar.
func sfTchar(c byte) bool {
	if feedbackIsAlpha(c) || feedbackIsDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func sfLowerHex(c byte) bool { return feedbackIsDigit(c) || 'a' <= c && c <= 'f' }

// sfUnescape returns the text of a raw String: the input itself when it
// holds no escape (the usual case, no allocation).
func sfUnescape(raw string) string {
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
