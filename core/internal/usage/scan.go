// Package usage reads the token usage an LLM provider reports in a
// response body, as the body is read.
package usage

// A Scan reads the token usage an LLM provider reports in a response
// body fed to it piece by piece as the caller reads it: a JSON document, or
// a stream of server-sent events whose data lines are JSON documents. It
// keeps a few counters and at most one short key, never the body, and costs
// O(1) per byte.
//
// A usage is an object under the key "usage" in a top-level object or one
// level below it (OpenAI's chat completion and its final stream chunk with
// stream_options.include_usage, the Responses API's response.completed,
// Anthropic's message and its message_start and message_delta events). Its
// integer members named in usageFields are read; deeper objects (the
// *_details breakdowns) and anything else are skipped. Each usage object
// read updates the fields it holds, so a stream's counts are the latest
// ones: Anthropic's message_delta reports cumulative counts over the input
// its message_start reported.
type Scan struct {
	SSE bool // the body is text/event-stream

	// Server-sent event framing (sse only).
	line     uint8 // lineField, lineDataStart, lineData or lineSkip
	field    [4]byte
	fieldLen int // bytes of the line's field name so far; 5: not "data"
	lineLen  int
	lastCR   bool

	// JSON tokenizing.
	depth     int    // open objects and arrays
	objects   uint64 // bit d-1 set: the container at depth d (≤ 64) is an object
	expectKey bool   // the next string is an object key
	inString  bool
	escape    bool
	inKey     bool
	key       [32]byte
	keyLen    int      // -1: longer than key, or escaped: no key we know
	keyAt     [4]uint8 // the last key read at depths 1..3 (a usageField index+1, or a keyUsage/keyMessage)
	inNum     bool
	numBad    bool // a negative, fractional or exponent number
	num       int64

	// The usage object being read.
	usageAt     int // its depth, 0 when none
	provisional bool
	cur         [len(usageFields)]int64
	curSeen     uint16

	// What has been read so far.
	last     [len(usageFields)]int64
	lastSeen uint16
	// final is false while the latest usage is only a stream's opening
	// report (Anthropic's message_start, under "message"), which a stream
	// cut short may never complete (Final).
	final bool
}

const (
	lineField = iota
	lineDataStart
	lineData
	lineSkip
)

// usageFields are the counts read from a usage object: OpenAI's and
// Anthropic's. total_tokens, when present, is the total; otherwise the
// others are added up (no provider reports both halves of a pair).
var usageFields = [...]string{
	"total_tokens",
	"prompt_tokens", "completion_tokens", // OpenAI chat completions
	"input_tokens", "output_tokens", // Anthropic; OpenAI Responses (with total_tokens)
	"cache_creation_input_tokens", "cache_read_input_tokens", // Anthropic
}

const (
	keyUsage   = uint8(len(usageFields) + 1)
	keyMessage = uint8(len(usageFields) + 2)
	maxUsage   = int64(1) << 53 // a count saturates here, never wraps
)

// Seen reports whether a usage object has been read.
func (s *Scan) Seen() bool { return s.lastSeen != 0 }

// Total returns the tokens the latest usage reports.
func (s *Scan) Total() int64 {
	if s.lastSeen&1 != 0 {
		return s.last[0]
	}
	var sum int64
	for i := 1; i < len(s.last); i++ {
		sum = min(sum+s.last[i], maxUsage)
	}
	return sum
}

// Final reports whether the latest usage read is more than a stream's
// opening report.
func (s *Scan) Final() bool { return s.final }

// Write feeds the next bytes of the body.
func (s *Scan) Write(p []byte) {
	if !s.SSE {
		for _, c := range p {
			s.json(c)
		}
		return
	}
	for _, c := range p {
		s.sseByte(c)
	}
}

// sseByte reads one byte of an event stream: the data lines go to the JSON
// tokenizer, and each event (ended by a blank line) is a document of its
// own. Lines end with LF, CR or CRLF.
func (s *Scan) sseByte(c byte) {
	if c == '\n' && s.lastCR {
		s.lastCR = false
		return
	}
	s.lastCR = c == '\r'
	if c == '\r' || c == '\n' {
		if s.line == lineData {
			s.json('\n')
		}
		if s.lineLen == 0 {
			s.resetJSON()
		}
		s.line, s.fieldLen, s.lineLen = lineField, 0, 0
		return
	}
	s.lineLen++
	switch s.line {
	case lineField:
		switch {
		case c == ':' && s.fieldLen == 4 && string(s.field[:]) == "data":
			s.line = lineDataStart
		case c == ':':
			s.line = lineSkip
		case s.fieldLen < 4:
			s.field[s.fieldLen] = c
			s.fieldLen++
		default:
			s.fieldLen = 5
		}
	case lineDataStart:
		s.line = lineData
		if c != ' ' {
			s.json(c)
		}
	case lineData:
		s.json(c)
	}
}

// resetJSON forgets a document's structure, keeping what was read.
func (s *Scan) resetJSON() {
	s.depth, s.objects, s.expectKey, s.inString, s.escape, s.inKey, s.inNum = 0, 0, false, false, false, false, false
	s.keyAt, s.usageAt, s.curSeen = [4]uint8{}, 0, 0
}

// json reads one byte of JSON. Malformed JSON is read as far as it makes
// sense and never fails: at worst a usage is missed.
func (s *Scan) json(c byte) {
	if s.inString {
		s.stringByte(c)
		return
	}
	if s.inNum {
		switch {
		case c >= '0' && c <= '9':
			s.num = min(s.num*10+int64(c-'0'), maxUsage)
			return
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
			s.numBad = true
			return
		}
		s.endNumber()
	}
	switch {
	case c == '"':
		s.inString, s.inKey = true, s.expectKey
		s.keyLen = 0
	case c == '{' || c == '[':
		s.open(c == '{')
	case c == '}' || c == ']':
		s.close()
	case c == ',':
		s.expectKey = s.isObject(s.depth)
	case c == ':':
		s.expectKey = false
	case c >= '0' && c <= '9' || c == '-':
		s.inNum, s.numBad, s.num = true, c == '-', 0
		if c != '-' {
			s.num = int64(c - '0')
		}
	}
}

func (s *Scan) stringByte(c byte) {
	switch {
	case s.escape:
		s.escape = false
	case c == '\\':
		s.escape = true
		s.keyLen = -1 // no key we read has escapes
	case c == '"':
		s.inString = false
		if s.inKey {
			s.endKey()
		}
	case s.inKey && s.keyLen >= 0:
		if s.keyLen == len(s.key) {
			s.keyLen = -1
			return
		}
		s.key[s.keyLen] = c
		s.keyLen++
	}
}

// endKey records the key just read at the current depth.
func (s *Scan) endKey() {
	if s.depth < 1 || s.depth >= len(s.keyAt) {
		return
	}
	id := uint8(0)
	if s.keyLen >= 0 {
		switch k := string(s.key[:s.keyLen]); k {
		case "usage":
			id = keyUsage
		case "message":
			id = keyMessage
		default:
			for i, f := range usageFields {
				if k == f {
					id = uint8(i + 1)
				}
			}
		}
	}
	s.keyAt[s.depth] = id
}

// endNumber stores a number that is the value of a usage field.
func (s *Scan) endNumber() {
	s.inNum = false
	if s.usageAt == 0 || s.depth != s.usageAt || s.numBad {
		return
	}
	if f := s.keyAt[s.depth]; f >= 1 && int(f) <= len(usageFields) {
		s.cur[f-1] = s.num
		s.curSeen |= 1 << (f - 1)
	}
}

func (s *Scan) isObject(d int) bool {
	return d >= 1 && d <= 64 && s.objects&(1<<(d-1)) != 0
}

// open enters an object or an array, noting a usage object.
func (s *Scan) open(object bool) {
	d := s.depth
	if object && s.usageAt == 0 && (d == 1 || d == 2) && s.isObject(d) && s.keyAt[d] == keyUsage {
		s.usageAt = d + 1
		s.provisional = d == 2 && s.keyAt[1] == keyMessage
		s.curSeen = 0
	}
	s.depth++
	if s.depth <= 64 {
		if object {
			s.objects |= 1 << (s.depth - 1)
		} else {
			s.objects &^= 1 << (s.depth - 1)
		}
	}
	if s.depth < len(s.keyAt) {
		s.keyAt[s.depth] = 0
	}
	s.expectKey = object
}

// close leaves an object or an array; leaving a usage object records it.
func (s *Scan) close() {
	if s.depth == 0 {
		return
	}
	if s.depth == s.usageAt {
		for i := range s.cur {
			if s.curSeen&(1<<i) != 0 {
				s.last[i] = s.cur[i]
			}
		}
		if s.curSeen != 0 {
			s.lastSeen |= s.curSeen
			s.final = !s.provisional
		}
		s.usageAt = 0
	}
	s.depth--
	s.expectKey = false
}
