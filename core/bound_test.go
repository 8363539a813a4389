package core

import "github.com/headgate-go/headgate/core/internal/gcra"

// checkBound verifies count(window W) <= burst + floor(W/interval) for
// every window that starts and ends at a send time (the tightest ones).
func checkBound(sends []int64, burst, interval int64) error {
	return gcra.CheckBound(sends, burst, interval)
}
