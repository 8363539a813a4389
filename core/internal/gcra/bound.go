package gcra

import (
	"fmt"
	"time"
)

// CheckBound reports the first window of sends (send times in order) that
// holds more than burst + floor(W/interval) sends: the package's invariant,
// checked over every window that starts and ends at a send time (the
// tightest ones). It is nil when there is none. Tests use it to check a
// schedule, however it was made.
func CheckBound(sends []int64, burst, interval int64) error {
	for i := range sends {
		for j := i; j < len(sends); j++ {
			w := sends[j] - sends[i]
			if int64(j-i+1) > burst+w/interval {
				return &boundError{from: sends[i], to: sends[j], count: j - i + 1, limit: burst + w/interval}
			}
		}
	}
	return nil
}

type boundError struct {
	from, to int64
	count    int
	limit    int64
}

func (e *boundError) Error() string {
	return fmt.Sprintf("window [%v, %v] holds %d sends, bound %d", time.Duration(e.from), time.Duration(e.to), e.count, e.limit)
}
