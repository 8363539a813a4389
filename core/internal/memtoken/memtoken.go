// Package memtoken is the refund token of core's MemoryStore: what Refund
// and Settle need of a turn, in bytes. Its invariant: Parse reads back
// exactly what New, AppendDims and AppendDim wrote, and finds anything
// else not ok.
//
// A token is the GCRA state before and after the turn's reservation (16
// bytes); a turn with extra dimensions adds the store's FIFO mark before
// it and its send time, then per dimension its state around the
// reservation, the units reserved, the reservation's number and the
// dimension's name (at most 65535 bytes of it).
package memtoken

import "encoding/binary"

// A Turn is what a token holds.
type Turn struct {
	TATBefore, TATAfter int64
	LastBefore, SendAt  int64 // with extra dimensions
	Dims                []Dim // nil without
}

// A Dim is one extra dimension of a turn: its state around the
// reservation, the units reserved, the reservation's number and the
// dimension's name.
type Dim struct {
	Before, After, N, Seq int64
	Name                  string
}

// New returns the token of a turn without extra dimensions.
func New(tatBefore, tatAfter int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(tatBefore))
	binary.BigEndian.PutUint64(b[8:], uint64(tatAfter))
	return string(b[:])
}

// AppendDims extends tok, New's, for a turn with extra dimensions: the
// FIFO mark before it and its send time. AppendDim adds each dimension.
func AppendDims(tok string, lastBefore, sendAt int64) []byte {
	b := binary.BigEndian.AppendUint64([]byte(tok), uint64(lastBefore))
	return binary.BigEndian.AppendUint64(b, uint64(sendAt))
}

// AppendDim appends d to b, AppendDims'.
func AppendDim(b []byte, d Dim) []byte {
	name := d.Name[:min(len(d.Name), 1<<16-1)]
	b = binary.BigEndian.AppendUint64(b, uint64(d.Before))
	b = binary.BigEndian.AppendUint64(b, uint64(d.After))
	b = binary.BigEndian.AppendUint64(b, uint64(d.N))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Seq))
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

// Parse reads a token; anything but one New (and AppendDims, AppendDim)
// wrote is not ok.
func Parse(tok string) (Turn, bool) {
	b := []byte(tok)
	u := func() int64 { v := int64(binary.BigEndian.Uint64(b)); b = b[8:]; return v }
	if len(b) < 16 {
		return Turn{}, false
	}
	r := Turn{TATBefore: u(), TATAfter: u()}
	if len(b) == 0 {
		return r, true
	}
	if len(b) < 16 {
		return Turn{}, false
	}
	r.LastBefore, r.SendAt = u(), u()
	r.Dims = []Dim{}
	for len(b) > 0 {
		if len(b) < 34 {
			return Turn{}, false
		}
		d := Dim{Before: u(), After: u(), N: u(), Seq: u()}
		l := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if len(b) < l {
			return Turn{}, false
		}
		d.Name, b = string(b[:l]), b[l:]
		r.Dims = append(r.Dims, d)
	}
	return r, true
}
