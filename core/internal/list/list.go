// Package list is an intrusive FIFO: a doubly linked list threaded
// through its elements, so an element leaves from the middle in O(1) and
// pushing allocates nothing. Its invariant: an element is in at most one
// list of a kind at a time, and its Link is zero while it is in none.
package list

// Link is the pair of pointers an element of a list embeds.
type Link[T any] struct{ Prev, Next *T }

// Links returns l; an element that embeds a Link[T] has it.
func (l *Link[T]) Links() *Link[T] { return l }

// Linked is a pointer to an element that embeds a Link[T].
type Linked[T any] interface {
	*T
	Links() *Link[T]
}

// A List is a FIFO of elements of type T, threaded through their Links.
// The zero List is empty.
type List[T any, P Linked[T]] struct {
	Head, Tail *T
	N          int // how many elements it holds
}

// Push puts x at the tail.
func (l *List[T, P]) Push(x *T) {
	lx := P(x).Links()
	lx.Prev, lx.Next = l.Tail, nil
	if l.Tail != nil {
		P(l.Tail).Links().Next = x
	} else {
		l.Head = x
	}
	l.Tail = x
	l.N++
}

// PushFront puts x at the head.
func (l *List[T, P]) PushFront(x *T) {
	lx := P(x).Links()
	lx.Prev, lx.Next = nil, l.Head
	if l.Head != nil {
		P(l.Head).Links().Prev = x
	} else {
		l.Tail = x
	}
	l.Head = x
	l.N++
}

// InsertAfter puts x right behind at, which is in the list.
func (l *List[T, P]) InsertAfter(at, x *T) {
	la, lx := P(at).Links(), P(x).Links()
	lx.Prev, lx.Next = at, la.Next
	if la.Next != nil {
		P(la.Next).Links().Prev = x
	} else {
		l.Tail = x
	}
	la.Next = x
	l.N++
}

// Remove takes x, which is in the list, out of it.
func (l *List[T, P]) Remove(x *T) {
	lx := P(x).Links()
	if lx.Prev != nil {
		P(lx.Prev).Links().Next = lx.Next
	} else {
		l.Head = lx.Next
	}
	if lx.Next != nil {
		P(lx.Next).Links().Prev = lx.Prev
	} else {
		l.Tail = lx.Prev
	}
	lx.Prev, lx.Next = nil, nil
	l.N--
}
