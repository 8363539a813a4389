// Package reqkey names a request by its method and URL in a uint64: the
// key core keeps a refused request's place under. Its invariant: a key
// has its top bit set, so it is never 0 nor any small number a caller
// keeps for itself (core's "no key" and anyKey).
package reqkey

import "net/http"

// Of returns r's key: an FNV-1a hash of its method and URL, with the top
// bit set. It allocates nothing. A collision only lets another request
// take the place, as a call with no key does.
func Of(r *http.Request) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		h = (h ^ 0xff) * prime // a separator: ("ab", "c") is not ("a", "bc")
	}
	add(r.Method)
	if u := r.URL; u != nil {
		add(u.Scheme)
		add(u.Host)
		add(u.Path)
		add(u.RawQuery)
	}
	return h | 1<<63
}
