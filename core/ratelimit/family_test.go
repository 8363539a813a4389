package ratelimit

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// TestParseFamilyName checks how a header name is read by its parts, and
// which names say no quota.
func TestParseFamilyName(t *testing.T) {
	for _, tt := range []struct {
		k    string
		want familyName
		ok   bool
	}{
		{"x-ratelimit-limit-requests-day", familyName{"x-ratelimit-", "requests", famLimit, 24 * time.Hour, true}, true},
		{"X-RateLimit-Reset-Tokens-Per-Minute", familyName{"x-ratelimit-", "tokens", famReset, time.Minute, true}, true},
		{"x-ratelimit-complexity-remaining", familyName{"x-ratelimit-", "complexity", famRemaining, 0, false}, true},
		{"x-ratelimit-minute-limit", familyName{"x-ratelimit-", "", famLimit, time.Minute, true}, true},
		{"x-ratelimit-hour-tokens-remaining", familyName{"x-ratelimit-", "tokens", famRemaining, time.Hour, true}, true},
		{"X-Rate-Limit-Api-Token-Max", familyName{"x-rate-limit-", "api-token", famLimit, 0, false}, true},
		{"X-Rate-Limit-Time-Reset-Ms", familyName{"x-rate-limit-", "", famResetMs, 0, false}, true},
		{"X-Rate-Limit-Interval-Milliseconds", familyName{"x-rate-limit-", "", famWindowMs, 0, false}, true},
		{"X-Sentry-Rate-Limit-ConcurrentRemaining", familyName{"x-sentry-rate-limit-", "concurrent", famRemaining, 0, false}, true},
		{"X-Discogs-Ratelimit", familyName{"x-discogs-ratelimit-", "", famLimit, 0, false}, true},
		{"X-HubSpot-RateLimit-Secondly", familyName{"x-hubspot-ratelimit-", "", famLimit, time.Second, true}, true},
		{"x-app-ratelimit-24hour-remaining", familyName{"x-app-ratelimit-", "", famRemaining, 24 * time.Hour, true}, true},
		{"x-ratelimit-remaining-month", familyName{"x-ratelimit-", "", famRemaining, -1, true}, true},
		{"X-Ratelimit-Retry-After", familyName{"x-ratelimit-", "", famResetAfter, 0, false}, true},
		{"x-ms-ratelimit-remaining-subscription-resource-requests", familyName{"x-ms-ratelimit-", "subscription-resource-requests", famRemaining, 0, false}, true},
		// No quota said: no field, two fields, a split dimension, too many words.
		{"X-RateLimit-Scope", familyName{}, false},
		{"X-RateLimit-NearLimit", familyName{}, false},
		{"x-ratelimit-limit-remaining", familyName{}, false},
		{"x-ratelimit-input-limit-tokens", familyName{}, false},
		{"x-ratelimit-a-b-c-d-e-limit", familyName{}, false},
		{"x-ratelimit-a-b-c-d-limit", familyName{"x-ratelimit-", "a-b-c-d", famLimit, 0, false}, true},
		{"ratelimit", familyName{}, false},
		{"x-ratelimitlimit", familyName{}, false},
		{"x-ratelimit-limit-0s", familyName{"x-ratelimit-", "0s", famLimit, 0, false}, true},
	} {
		got, ok := parseFamilyName(tt.k)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("parseFamilyName(%q) = %+v, %v; want %+v, %v", tt.k, got, ok, tt.want, tt.ok)
		}
	}
}

// TestParseFamilyWindows checks the multi-window rule: as many remaining
// (or used) counts as limits pair by position, resets too when they list
// as many; otherwise one quota, read conservatively (the smallest remaining
// count, as before).
func TestParseFamilyWindows(t *testing.T) {
	q := func(remaining, limit int, reset time.Duration) Quota {
		return Quota{"requests", "requests", remaining, limit, reset, 0}
	}
	for _, tt := range []struct {
		name string
		h    http.Header
		want []Quota
	}{
		{"remaining-per-window", fbHeader("X-RateLimit-Limit", "10, 100", "X-RateLimit-Remaining", "3, 90", "X-RateLimit-Reset", "5, 50"),
			[]Quota{q(3, 10, 5*time.Second), q(90, 100, 50*time.Second)}},
		{"reset-count-differs", fbHeader("X-RateLimit-Limit", "10, 100", "X-RateLimit-Remaining", "3, 90", "X-RateLimit-Reset", "5"),
			[]Quota{q(3, 10, -1), q(90, 100, -1)}},
		{"used-per-window", fbHeader("X-RateLimit-Limit", "10,100", "X-RateLimit-Usage", "12,20"),
			[]Quota{q(0, 10, -1), q(80, 100, -1)}},
		{"counts-differ-folded", fbHeader("X-RateLimit-Limit", "10, 100", "X-RateLimit-Remaining", "3"),
			[]Quota{q(3, 10, -1)}},
		{"one-limit-folded-remaining", fbHeader("X-RateLimit-Limit", "1000", "X-RateLimit-Remaining", "991, 98"),
			[]Quota{q(98, 1000, -1)}},
		{"garbage-member-folded", fbHeader("X-RateLimit-Limit", "10, x", "X-RateLimit-Remaining", "3, 4"),
			[]Quota{q(3, 10, -1)}},
	} {
		if got := Parse(200, tt.h, fbT0).Quotas; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Parse(200, %v).Quotas\n got %+v\nwant %+v", tt.name, tt.h, got, tt.want)
		}
	}
}

// TestParseFamilyBounds checks that the family headers read are bounded
// and chosen by name, never by the map's order: past the bound, the names
// that sort last drop.
func TestParseFamilyBounds(t *testing.T) {
	h := http.Header{}
	for i := range familyMaxHeaders + 8 {
		h.Set("X-Vendor"+string(rune('a'+i%26))+string(rune('a'+i/26))+"-Ratelimit-Remaining", "5")
	}
	first := Parse(200, h, fbT0)
	if len(first.Quotas) != familyMaxGroups {
		t.Fatalf("%d family quotas, want the bound %d", len(first.Quotas), familyMaxGroups)
	}
	for range 20 {
		if again := Parse(200, h, fbT0); !reflect.DeepEqual(again, first) {
			t.Fatalf("the result depends on the map's order: %+v then %+v", first, again)
		}
	}
}
