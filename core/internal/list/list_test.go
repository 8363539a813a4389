package list

import (
	"slices"
	"testing"
)

type elem struct {
	v int
	Link[elem]
}

func values(l *List[elem, *elem]) []int {
	var vs []int
	for e := l.Head; e != nil; e = e.Next {
		vs = append(vs, e.v)
	}
	return vs
}

// TestList: pushes at both ends, an insertion and removals from the head,
// the middle and the tail keep the order, the count and the links.
func TestList(t *testing.T) {
	var l List[elem, *elem]
	es := make([]elem, 5)
	for i := range es {
		es[i].v = i
	}
	l.Push(&es[1])
	l.Push(&es[3])
	l.PushFront(&es[0])
	l.InsertAfter(&es[1], &es[2])
	l.InsertAfter(&es[3], &es[4])
	if got := values(&l); !slices.Equal(got, []int{0, 1, 2, 3, 4}) || l.N != 5 {
		t.Fatalf("list %v (n %d), want [0 1 2 3 4]", got, l.N)
	}
	for _, i := range []int{2, 0, 4} {
		l.Remove(&es[i])
		if es[i].Link != (Link[elem]{}) {
			t.Fatalf("removed element %d still linked", i)
		}
	}
	if got := values(&l); !slices.Equal(got, []int{1, 3}) || l.N != 2 || l.Tail != &es[3] || es[3].Prev != &es[1] {
		t.Fatalf("after removals: %v (n %d), want [1 3]", got, l.N)
	}
	l.Remove(&es[1])
	l.Remove(&es[3])
	if l.Head != nil || l.Tail != nil || l.N != 0 {
		t.Fatalf("emptied list: %+v", l)
	}
}
