package core

import (
	"context"
	"log/slog"
	"time"
)

// SlogObserver returns an Observer that writes one structured record per
// event to l, so operators can tell from the log alone why calls waited
// and whether the configured rate is right. A nil l means slog.Default(),
// looked up at each event (so slog.SetDefault applies later too).
//
// Levels:
//
//	ERROR  StoreFailure (the shared store, WithStore, is out of reach)
//	WARN   Pushback (the server asked for a pause), RateChanged to a lower
//	       rate (adaptive throttling or SetRate cut it), LeakedBody
//	INFO   RateChanged to the same or a higher rate (recovery, SetRate),
//	       StoreRecovered
//	DEBUG  Paced, Throttled, Paused, SlotWait: the waits themselves
//
// Sustained WARN records mean the configured rate is too high; persistent
// DEBUG waits mean the budget is doing its job, or could be raised.
//
// Each record carries the attributes that apply to its event:
//
//	budget    the budget's name (WithName), when it has one
//	reason    the event's Reason: "paced", "throttled", "paused",
//	          "slot_wait", "pushback", "rate_changed", "leaked_body",
//	          "store_failure", "store_recovered"
//	wait      the time the call waited (Paced, Throttled, Paused, SlotWait)
//	pause     the pause the response asked for (Pushback)
//	status    the response status (Pushback; RateChanged caused by a response)
//	old_rate  the effective rate before a RateChanged event, in requests/s
//	new_rate  the effective rate after it, in requests/s
//	error     the store's error (StoreFailure)
//
// The level is checked with the handler's Enabled before the record is
// built, so events at a disabled level cost no allocation. Records carry no
// source location (the observer's would mislead) and are written with
// context.Background().
func SlogObserver(l *slog.Logger) Observer {
	return func(e Event) {
		logger := l
		if logger == nil {
			logger = slog.Default()
		}
		level, msg := slogLevel(e)
		ctx := context.Background()
		h := logger.Handler()
		if !h.Enabled(ctx, level) {
			return
		}
		r := slog.NewRecord(time.Now(), level, msg, 0)
		if e.Budget != "" {
			r.AddAttrs(slog.String("budget", e.Budget))
		}
		r.AddAttrs(slog.String("reason", e.Reason.String()))
		switch e.Reason {
		case Paced, Throttled, Paused, SlotWait:
			r.AddAttrs(slog.Duration("wait", e.Wait))
		case Pushback:
			r.AddAttrs(slog.Int("status", e.Status), slog.Duration("pause", e.Wait))
		case StoreFailure:
			r.AddAttrs(slog.String("error", e.Err.Error()))
		case RateChanged:
			if e.Status != 0 {
				r.AddAttrs(slog.Int("status", e.Status))
			}
			r.AddAttrs(slog.Float64("old_rate", e.OldRate), slog.Float64("new_rate", e.NewRate))
		case LeakedBody:
		default: // a reason this version does not know: everything that is set
			if e.Wait != 0 {
				r.AddAttrs(slog.Duration("wait", e.Wait))
			}
			if e.Status != 0 {
				r.AddAttrs(slog.Int("status", e.Status))
			}
			if e.OldRate != 0 || e.NewRate != 0 {
				r.AddAttrs(slog.Float64("old_rate", e.OldRate), slog.Float64("new_rate", e.NewRate))
			}
		}
		_ = h.Handle(ctx, r) // an Observer has nowhere to report a handler's error
	}
}

// slogLevel returns the level and message of an event's record.
func slogLevel(e Event) (slog.Level, string) {
	switch e.Reason {
	case Paced:
		return slog.LevelDebug, "headgate: call waited for its turn"
	case Throttled:
		return slog.LevelDebug, "headgate: call waited for its turn at a throttled rate"
	case Paused:
		return slog.LevelDebug, "headgate: call waited for a server pause"
	case SlotWait:
		return slog.LevelDebug, "headgate: call waited for a concurrency slot"
	case Pushback:
		return slog.LevelWarn, "headgate: server asked the budget to pause"
	case RateChanged:
		switch {
		case e.NewRate < e.OldRate:
			return slog.LevelWarn, "headgate: budget rate decreased"
		case e.NewRate > e.OldRate:
			return slog.LevelInfo, "headgate: budget rate increased"
		}
		return slog.LevelInfo, "headgate: budget rate set"
	case LeakedBody:
		return slog.LevelWarn, "headgate: response body never closed; the garbage collector freed its slot"
	case StoreFailure:
		return slog.LevelError, "headgate: budget store unreachable"
	case StoreRecovered:
		return slog.LevelInfo, "headgate: budget store reachable again"
	}
	return slog.LevelInfo, "headgate: budget event"
}
