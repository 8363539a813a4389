package ratelimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// LoadProfile reads a Spec from JSON, as a configuration file holds it, and
// returns its Profile (see NewProfile). The members are the Spec's fields in
// snake case; durations are Go duration strings ("1m30s"); encodings are
// the Encoding strings ("unix-ms"). A member it does not know, or text after
// the object, is an error.
//
//	{
//	  "name": "acme",
//	  "body_bytes": 1024,
//	  "refusal_statuses": [420],
//	  "quotas": [{
//	    "name": "requests", "unit": "requests",
//	    "limit": "X-Acme-Limit", "remaining": "X-Acme-Left", "used": "X-Acme-Used",
//	    "used_of_limit": "X-Acme-Calls",
//	    "reset": "X-Acme-Reset", "reset_encoding": "unix",
//	    "window": "1m", "window_header": "X-Acme-Window", "window_encoding": "seconds",
//	    "rolling": false
//	  }],
//	  "signals": [{
//	    "statuses": [400, 429], "contains": ["slow down"],
//	    "field": "code", "values": ["rate_limited"],
//	    "wait": "retry_after", "wait_encoding": "seconds",
//	    "until_reset": false, "default_wait": "1s", "min_wait": "0s"
//	  }]
//	}
func LoadProfile(data []byte) (Profile, error) {
	var js jsonSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&js); err != nil {
		return NoProfile, fmt.Errorf("%w: %w", errSpec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return NoProfile, fmt.Errorf("%w: text after the JSON object", errSpec)
	}
	s, err := js.spec()
	if err != nil {
		return NoProfile, err
	}
	return NewProfile(s)
}

// jsonSpec, jsonQuota and jsonSignal are Spec, QuotaSpec and Signal as
// LoadProfile reads them.
type jsonSpec struct {
	Name            string       `json:"name"`
	Quotas          []jsonQuota  `json:"quotas"`
	Signals         []jsonSignal `json:"signals"`
	RefusalStatuses []int        `json:"refusal_statuses"`
	BodyBytes       int          `json:"body_bytes"`
}

type jsonQuota struct {
	Name           string   `json:"name"`
	Unit           string   `json:"unit"`
	Limit          string   `json:"limit"`
	Remaining      string   `json:"remaining"`
	Used           string   `json:"used"`
	UsedOfLimit    string   `json:"used_of_limit"`
	Reset          string   `json:"reset"`
	ResetEncoding  Encoding `json:"reset_encoding"`
	Window         string   `json:"window"`
	WindowHeader   string   `json:"window_header"`
	WindowEncoding Encoding `json:"window_encoding"`
	Rolling        bool     `json:"rolling"`
}

type jsonSignal struct {
	Statuses     []int    `json:"statuses"`
	Contains     []string `json:"contains"`
	Field        string   `json:"field"`
	Values       []string `json:"values"`
	Wait         string   `json:"wait"`
	WaitEncoding Encoding `json:"wait_encoding"`
	UntilReset   bool     `json:"until_reset"`
	DefaultWait  string   `json:"default_wait"`
	MinWait      string   `json:"min_wait"`
}

// spec converts js, reading its durations.
func (js *jsonSpec) spec() (Spec, error) {
	s := Spec{Name: js.Name, RefusalStatuses: js.RefusalStatuses, BodyBytes: js.BodyBytes}
	for i, q := range js.Quotas {
		w, err := jsonDuration(js.Name, fmt.Sprintf("quotas[%d].window", i), q.Window)
		if err != nil {
			return Spec{}, err
		}
		s.Quotas = append(s.Quotas, QuotaSpec{Name: q.Name, Unit: q.Unit, Limit: q.Limit,
			Remaining: q.Remaining, Used: q.Used, UsedOfLimit: q.UsedOfLimit, Reset: q.Reset,
			ResetEncoding: q.ResetEncoding, Window: w, WindowHeader: q.WindowHeader,
			WindowEncoding: q.WindowEncoding, Rolling: q.Rolling})
	}
	for i, g := range js.Signals {
		dw, err := jsonDuration(js.Name, fmt.Sprintf("signals[%d].default_wait", i), g.DefaultWait)
		if err != nil {
			return Spec{}, err
		}
		mw, err := jsonDuration(js.Name, fmt.Sprintf("signals[%d].min_wait", i), g.MinWait)
		if err != nil {
			return Spec{}, err
		}
		s.Signals = append(s.Signals, Signal{Statuses: g.Statuses, Contains: g.Contains, Field: g.Field,
			Values: g.Values, Wait: g.Wait, WaitEncoding: g.WaitEncoding, UntilReset: g.UntilReset,
			DefaultWait: dw, MinWait: mw})
	}
	return s, nil
}

// jsonDuration reads a Go duration string; "" is 0.
func jsonDuration(name, field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, specErr(name, "%s: %v", field, err)
	}
	return d, nil
}
