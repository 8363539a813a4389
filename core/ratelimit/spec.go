package ratelimit

import (
	"errors"
	"fmt"
	"net/textproto"
	"strings"
	"time"
)

// A Spec describes, declaratively, the rate-limit signals of one API that the
// generic reader does not see: headers under the API's own names, fields of
// its refusal bodies, statuses it refuses with. NewProfile turns it into a
// Profile; LoadProfile reads one from JSON. The built-in profiles are Specs
// too (Profile.Spec returns theirs), some with code for what no Spec says.
//
// A profile adds to the generic reading: its quotas join the generic ones
// (and the headers it names are not read generically), its signals then
// refine the result.
type Spec struct {
	// Name names the profile ("etsy"): 1 to 64 letters, digits, '-', '_'
	// or '.'. Required.
	Name string
	// Quotas lists the quotas the API reports in headers of its own names;
	// at most 8.
	Quotas []QuotaSpec
	// Signals lists what the API says in a response body; at most 8.
	Signals []Signal
	// RefusalStatuses lists the statuses (400 to 599) that always mean a
	// refusal (Exhausted), such as Twitter's old 420; 429 and 503 always do.
	RefusalStatuses []int
	// BodyBytes is how much of a body the signals read, at most 4096; 0
	// means 1024.
	BodyBytes int
}

// A QuotaSpec names the headers of one quota. The quota is reported when its
// remaining count is known: from Remaining, else Limit less Used, else the
// UsedOfLimit pair.
type QuotaSpec struct {
	// Name and Unit name the quota in Feedback.Quotas; the defaults are
	// "requests" and "requests". A unit of "tokens" counts tokens.
	Name, Unit string
	// Limit, Remaining and Used name the headers holding the quota's size,
	// what is left and what is spent (counts; a remaining count listed or
	// sent twice reads as the smallest).
	Limit, Remaining, Used string
	// UsedOfLimit names a header holding "used/limit" ("32/40").
	UsedOfLimit string
	// Reset names the header holding when the quota is restored, read as
	// ResetEncoding says.
	Reset         string
	ResetEncoding Encoding
	// Window is the quota's window when the API documents it; WindowHeader
	// names a header stating it, read as WindowEncoding says (seconds by
	// default), which wins when valid.
	Window         time.Duration
	WindowHeader   string
	WindowEncoding Encoding
	// Rolling says the window rolls: what is spent returns within one
	// window, so with no reset header the reset is the window.
	Rolling bool
}

// A Signal is what a response body says about the quota, on the statuses it
// names. It matches when the body contains one of Contains (in any case), or
// when its JSON member Field holds one of Values (any value when Values is
// empty); a signal with neither matches on its status alone, when its Wait
// member is present. A match is a refusal (Exhausted). Its pause is, in
// order: the body's Wait member, when no retry header decided the pause (the
// longer of it and the quota's pause); else, when nothing gave a pause, the
// binding quota's reset if UntilReset, else DefaultWait; and at least
// MinWait.
//
// The body is read only on the statuses named, and on a 2xx only when the
// response says it is JSON; never a stream.
type Signal struct {
	// Statuses lists the statuses (100 to 599) whose body is read; required.
	Statuses []int
	// Contains lists texts, any of which marks a refusal; at most 8, each
	// 1 to 128 bytes.
	Contains []string
	// Field is a JSON member name, at any depth (the first found counts),
	// and Values what it must hold to mark a refusal (at most 8).
	Field  string
	Values []string
	// Wait is a JSON member name holding how long to wait, read as
	// WaitEncoding says (seconds, or a Go duration, by default).
	Wait         string
	WaitEncoding Encoding
	// UntilReset waits for the binding quota's reset when nothing named a
	// pause; DefaultWait is the wait when nothing did, MinWait the least.
	UntilReset           bool
	DefaultWait, MinWait time.Duration
}

// Encoding says how a header or body value states a time. The zero value,
// EncodingAuto, tells the forms apart as Parse does.
type Encoding string

const (
	// EncodingAuto reads a reset as Parse does (seconds from now, Unix
	// seconds or milliseconds told apart by size, a Go duration, an RFC 3339
	// time or an HTTP-date), and a wait or window as seconds or a Go
	// duration.
	EncodingAuto Encoding = ""
	// EncodingSeconds is a non-negative decimal number of seconds from now.
	EncodingSeconds Encoding = "seconds"
	// EncodingMilliseconds is a number of milliseconds from now.
	EncodingMilliseconds Encoding = "milliseconds"
	// EncodingUnix is a Unix time in seconds; EncodingUnixMilli in
	// milliseconds.
	EncodingUnix      Encoding = "unix"
	EncodingUnixMilli Encoding = "unix-ms"
	// EncodingDuration is a Go duration ("1m30s", "26s").
	EncodingDuration Encoding = "duration"
	// EncodingDate is an HTTP-date or an RFC 3339 time.
	EncodingDate Encoding = "date"
)

// The bounds a Spec is held to, so that reading a response stays bounded.
const (
	specMaxQuotas   = 8
	specMaxSignals  = 8
	specMaxList     = 8
	specMaxStatuses = 16
	specMaxName     = 64
	specMaxText     = 128
	specBodyDefault = 1024
)

// errSpec is what every error of NewProfile wraps.
var errSpec = errors.New("headgate: invalid profile spec")

// NewProfile checks s and returns the Profile it describes, or an error
// that names the first field out of bounds. The profile keeps its own copy
// of s.
func NewProfile(s Spec) (Profile, error) {
	p, err := compileSpec(s, hookNone)
	if err != nil {
		return NoProfile, err
	}
	return Profile{p}, nil
}

// profile is what a Profile points to: its spec, checked, and the code of a
// built-in profile for what its spec does not say.
type profile struct {
	spec     Spec
	quotas   []QuotaSpec // header names canonical; Name, Unit defaulted
	headers  []string    // the lower-case names its quotas read
	hook     hook
	bodyMax  int
	statuses []int // the statuses whose body is read
}

func specErr(name, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", errSpec, name, fmt.Sprintf(format, args...))
}

// compileSpec checks s and builds its profile, with hook h.
func compileSpec(s Spec, h hook) (*profile, error) {
	if !specToken(s.Name, false) {
		return nil, specErr(s.Name, "Name must be 1 to %d letters, digits, '-', '_' or '.'", specMaxName)
	}
	if len(s.Quotas) > specMaxQuotas || len(s.Signals) > specMaxSignals {
		return nil, specErr(s.Name, "at most %d Quotas and %d Signals", specMaxQuotas, specMaxSignals)
	}
	if s.BodyBytes < 0 || s.BodyBytes > profileMaxBody {
		return nil, specErr(s.Name, "BodyBytes %d is outside [0, %d]", s.BodyBytes, profileMaxBody)
	}
	if err := specStatuses(s.Name, "RefusalStatuses", s.RefusalStatuses, 400, false); err != nil {
		return nil, err
	}
	p := &profile{hook: h, bodyMax: s.BodyBytes}
	if p.bodyMax == 0 {
		p.bodyMax = specBodyDefault
	}
	for i, q := range s.Quotas {
		if err := checkQuota(s.Name, i, &q); err != nil {
			return nil, err
		}
		for _, name := range []*string{&q.Limit, &q.Remaining, &q.Used, &q.UsedOfLimit, &q.Reset, &q.WindowHeader} {
			if *name != "" {
				*name = textproto.CanonicalMIMEHeaderKey(*name)
				p.headers = append(p.headers, strings.ToLower(*name))
			}
		}
		p.quotas = append(p.quotas, q)
	}
	for i, g := range s.Signals {
		if err := checkSignal(s.Name, i, &g); err != nil {
			return nil, err
		}
		for _, st := range g.Statuses {
			if !containsInt(p.statuses, st) {
				p.statuses = append(p.statuses, st)
			}
		}
	}
	p.spec = cloneSpec(s)
	return p, nil
}

func checkQuota(name string, i int, q *QuotaSpec) error {
	if q.Name == "" {
		q.Name = "requests"
	}
	if q.Unit == "" {
		q.Unit = "requests"
	}
	if !specToken(q.Name, false) || !specToken(q.Unit, false) {
		return specErr(name, "Quotas[%d]: Name and Unit must be 1 to %d letters, digits, '-', '_' or '.'", i, specMaxName)
	}
	for _, h := range []string{q.Limit, q.Remaining, q.Used, q.UsedOfLimit, q.Reset, q.WindowHeader} {
		if !specToken(h, true) {
			return specErr(name, "Quotas[%d]: header name %q is not a field name of at most %d bytes", i, h, specMaxName)
		}
	}
	if q.Remaining == "" && q.UsedOfLimit == "" && (q.Used == "" || q.Limit == "") {
		return specErr(name, "Quotas[%d]: needs Remaining, UsedOfLimit, or Used and Limit", i)
	}
	if q.Window < 0 {
		return specErr(name, "Quotas[%d]: Window %v is negative", i, q.Window)
	}
	if !q.ResetEncoding.valid() || !q.WindowEncoding.valid() {
		return specErr(name, "Quotas[%d]: unknown encoding", i)
	}
	return nil
}

func checkSignal(name string, i int, g *Signal) error {
	if err := specStatuses(name, fmt.Sprintf("Signals[%d].Statuses", i), g.Statuses, 100, true); err != nil {
		return err
	}
	if len(g.Contains) > specMaxList || len(g.Values) > specMaxList {
		return specErr(name, "Signals[%d]: at most %d Contains and %d Values", i, specMaxList, specMaxList)
	}
	for _, c := range g.Contains {
		if c == "" || len(c) > specMaxText {
			return specErr(name, "Signals[%d]: each Contains must be 1 to %d bytes", i, specMaxText)
		}
	}
	for _, v := range g.Values {
		if len(v) > specMaxText {
			return specErr(name, "Signals[%d]: each Value must be at most %d bytes", i, specMaxText)
		}
	}
	if !specJSONName(g.Field) || !specJSONName(g.Wait) {
		return specErr(name, "Signals[%d]: Field and Wait must be JSON member names of at most %d bytes", i, specMaxName)
	}
	if len(g.Values) > 0 && g.Field == "" {
		return specErr(name, "Signals[%d]: Values need a Field", i)
	}
	if len(g.Contains) == 0 && g.Field == "" && g.Wait == "" {
		return specErr(name, "Signals[%d]: needs Contains, Field or Wait", i)
	}
	if g.DefaultWait < 0 || g.MinWait < 0 {
		return specErr(name, "Signals[%d]: waits must not be negative", i)
	}
	if !g.WaitEncoding.valid() {
		return specErr(name, "Signals[%d]: unknown WaitEncoding %q", i, g.WaitEncoding)
	}
	return nil
}

// specStatuses checks a list of statuses within [lowest, 599].
func specStatuses(name, field string, ss []int, lowest int, required bool) error {
	if required && len(ss) == 0 || len(ss) > specMaxStatuses {
		return specErr(name, "%s must list 1 to %d statuses", field, specMaxStatuses)
	}
	for _, st := range ss {
		if st < lowest || st > 599 {
			return specErr(name, "%s: status %d is outside [%d, 599]", field, st, lowest)
		}
	}
	return nil
}

// specToken reports whether s is a name of at most specMaxName bytes of
// letters, digits, '-', '_' and '.' (empty allowed when optional).
func specToken(s string, optional bool) bool {
	if s == "" {
		return optional
	}
	if len(s) > specMaxName {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// specJSONName reports whether s is a usable JSON member name: at most
// specMaxName bytes, no quote, backslash or control byte (empty allowed).
func specJSONName(s string) bool {
	if len(s) > specMaxName {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (e Encoding) valid() bool {
	switch e {
	case EncodingAuto, EncodingSeconds, EncodingMilliseconds, EncodingUnix, EncodingUnixMilli,
		EncodingDuration, EncodingDate:
		return true
	}
	return false
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// cloneSpec returns a copy of s sharing no slice with it.
func cloneSpec(s Spec) Spec {
	s.Quotas = append([]QuotaSpec(nil), s.Quotas...)
	s.RefusalStatuses = append([]int(nil), s.RefusalStatuses...)
	sigs := make([]Signal, len(s.Signals))
	for i, g := range s.Signals {
		g.Statuses = append([]int(nil), g.Statuses...)
		g.Contains = append([]string(nil), g.Contains...)
		g.Values = append([]string(nil), g.Values...)
		sigs[i] = g
	}
	if len(sigs) == 0 {
		sigs = nil
	}
	s.Signals = sigs
	return s
}
