package core_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/headgate-go/headgate/core"
)

// ExampleSlogObserver logs what the budget does: here a 429 that pauses it
// and halves its rate, then an operator lowering the configured rate.
func ExampleSlogObserver() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug, // waits are logged at DEBUG
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	}))
	budget := core.MustBudget(core.PerSecond(10), core.WithName("github"),
		core.WithObserver(core.SlogObserver(logger)))

	// A request refused with a wait of one second or less: the pace was
	// too fast.
	permit, err := budget.Acquire(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	permit.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
	permit.Release()
	_ = budget.SetRate(core.PerSecond(4))
	// Output:
	// level=WARN msg="headgate: server asked the budget to pause" budget=github reason=pushback status=429 pause=1s
	// level=WARN msg="headgate: budget rate decreased" budget=github reason=rate_changed status=429 old_rate=10 new_rate=5
	// level=WARN msg="headgate: budget rate decreased" budget=github reason=rate_changed old_rate=5 new_rate=2
}

// ExampleParseRate reads rates as they are written in configuration.
func ExampleParseRate() {
	for _, s := range []string{"600/min", "5/sec", "10/100ms", "1/1h30m", "0/s", "5"} {
		r, err := core.ParseRate(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-8s = %v, one request every %v\n", s, r, r.Interval())
	}
	// Output:
	// 600/min  = 600/min, one request every 100ms
	// 5/sec    = 5/s, one request every 200ms
	// 10/100ms = 10/100ms, one request every 10ms
	// 1/1h30m  = 1/1h30m0s, one request every 1h30m0s
	// headgate: rate "0/s" is invalid: the count must be positive, got 0
	// headgate: rate "5" is invalid: the period is missing; write <count>/<period>, e.g. "5/s", "300/min" or "10/100ms"
}

// ExampleRate_Set takes a rate from the command line.
func ExampleRate_Set() {
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	rate := core.PerSecond(5) // the default
	fs.Var(&rate, "rate", "requests per period, e.g. 5/s or 300/min")
	if err := fs.Parse([]string{"-rate=300/minute"}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(rate, rate.Interval())
	// Output: 300/min 200ms
}

// ExampleNewBudgetOrDisabled builds budgets from a configuration file in
// which leaving a rate empty means "no limit".
func ExampleNewBudgetOrDisabled() {
	var cfg struct {
		Search core.Rate `json:"search_rate"`
		Local  core.Rate `json:"local_rate"`
	}
	err := json.Unmarshal([]byte(`{"search_rate": "1/h", "local_rate": ""}`), &cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct {
		name string
		rate core.Rate
	}{{"search", cfg.Search}, {"local", cfg.Local}} {
		b, err := core.NewBudgetOrDisabled(c.rate, core.WithName(c.name))
		if err != nil {
			fmt.Println(err)
			continue
		}
		sent, refused := 0, 0
		for range 3 { // each call may wait up to a second
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if p, err := b.Acquire(ctx); err != nil {
				refused++ // its turn is an hour away: it fails at once
			} else {
				sent++
				p.Release()
			}
			cancel()
		}
		text, _ := c.rate.MarshalText()
		fmt.Printf("%s (rate %q): %d sent, %d refused\n", c.name, text, sent, refused)
	}
	out, _ := json.Marshal(cfg)
	fmt.Println(string(out))
	// Output:
	// search (rate "1/h"): 1 sent, 2 refused
	// local (rate ""): 3 sent, 0 refused
	// {"search_rate":"1/h","local_rate":""}
}
