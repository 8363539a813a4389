package reqkey

import (
	"net/http"
	"testing"
)

// anyKey is core's key of a place any call may take.
const anyKey uint64 = 1

// Of tells requests apart by method and URL, is never "no key" nor
// anyKey, and costs no allocation on the admit path.
func TestOf(t *testing.T) {
	get := func(url string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := get("http://api.test/v1/items/1"), get("http://api.test/v1/items/2")
	post, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/items/1", nil)
	ka, kb, kp := Of(a), Of(b), Of(post)
	if ka == kb || ka == kp || ka != Of(get("http://api.test/v1/items/1")) {
		t.Errorf("keys %x %x %x: want one per method and URL, the same for the same", ka, kb, kp)
	}
	for _, k := range []uint64{ka, kb, kp, Of(&http.Request{})} {
		if k == 0 || k == anyKey {
			t.Errorf("key %x: want neither 0 nor anyKey", k)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Of(a) }); n != 0 {
		t.Errorf("Of allocates %v times, want 0", n)
	}
}
