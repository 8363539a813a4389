// Package ascii holds the byte-level helpers the header parsers share:
// ASCII classes, case folding and HTTP's optional white space. None of them
// allocates.
package ascii

// IsDigit reports whether c is an ASCII decimal digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// IsAlpha reports whether c is an ASCII letter.
func IsAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// Lower returns c in lower case when it is an ASCII upper-case letter.
func Lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// EqualFold reports whether a and b are equal under ASCII case folding.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if Lower(a[i]) != Lower(b[i]) {
			return false
		}
	}
	return true
}

// TrimOWS trims the optional white space (SP and HTAB) around a field value,
// which net/http trims already but a header map built by hand may keep.
func TrimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// ContainsFold reports whether sub is within s under ASCII case folding.
func ContainsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
