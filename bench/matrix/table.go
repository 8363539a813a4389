package matrix

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// scenarioTitles say what each scenario's table shows.
var scenarioTitles = map[string]string{
	"exact":   "configured at the server's exact rate and burst — cell: 429s % of calls · makespan ÷ ideal",
	"2x":      "configured at twice the server's rate and burst — cell: 429s % · makespan ÷ ideal",
	"half":    "configured at half the server's rate and burst — cell: makespan ÷ the configured limit's ideal · kept to the configured rate: ✓ exactly, ±N ms within N ms of scheduling noise, ✗ not",
	"pause":   "the server pauses 2 s once a third of the batch is admitted — cell: makespan ÷ (ideal + pause) · requests sent into the known pause · the refused call's retry, from the pause's end",
	"learned": "no rate configured: the budget learns it — cell: 429s % · makespan ÷ ideal",
}

// Render writes results as one markdown table per scenario: a row per
// server, a column per client, in the order the results come.
func Render(results []Result) string {
	var b strings.Builder
	var scenarios, servers, clients []string
	add := func(list *[]string, s string) {
		if !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	byKey := map[[3]string]Result{}
	for _, r := range results {
		add(&scenarios, r.Scenario)
		add(&servers, r.Server)
		add(&clients, r.Client)
		byKey[[3]string{r.Scenario, r.Server, r.Client}] = r
	}
	var skipped []string
	floors := false
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "**%s**: %s\n\n", sc, scenarioTitles[sc])
		fmt.Fprintf(&b, "| server | %s |\n|---|%s\n", strings.Join(clients, " | "), strings.Repeat("--:|", len(clients)))
		for _, s := range servers {
			var cells []string
			for _, c := range clients {
				r, ok := byKey[[3]string{sc, s, c}]
				switch {
				case !ok:
					cells = append(cells, "")
				case r.Skipped != "":
					cells = append(cells, "–")
					if !slices.Contains(skipped, r.Skipped) {
						skipped = append(skipped, r.Skipped)
					}
				default:
					cells = append(cells, r.Figures())
					floors = floors || r.Floor > 0
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", s, strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
	if floors {
		b.WriteString("(floor N×): on a sliding-window server, a greedy client's makespan (within 1 % of what any client can reach), " +
			"for where in the server's window the batch started (bench/matrix/floor.go)\n")
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "– %s\n", s)
	}
	return b.String()
}

// Figures is r's cell in its scenario's table.
func (r Result) Figures() string {
	var s string
	switch r.Scenario {
	case "half":
		kept := "✓"
		switch {
		case r.ConfiguredSlack >= maxSlack:
			kept = "✗"
		case r.ConfiguredSlack > 0:
			kept = fmt.Sprintf("±%.1f ms", float64(r.ConfiguredSlack)/float64(time.Millisecond))
		}
		s = fmt.Sprintf("%.2f× · %s", r.Ratio(), kept)
	case "pause":
		retry := "no retry"
		if r.RetrySeen {
			retry = signedMs(r.RetryDelay)
		}
		s = fmt.Sprintf("%s · %d · %s", r.ratioText(), r.IntoKnown, retry)
	default:
		s = fmt.Sprintf("%.1f%% · %s", r.RefusedPct(), r.ratioText())
	}
	if r.Failed > 0 {
		s += fmt.Sprintf(" · **%d failed**", r.Failed)
	}
	if r.Leaked > 0 {
		s += fmt.Sprintf(" · **%d leaked**", r.Leaked)
	}
	return s
}

// ratioText is makespan ÷ ideal, and the cell's floor when it has one.
func (r Result) ratioText() string {
	if f := r.FloorRatio(); f > 0 {
		return fmt.Sprintf("%.2f× (floor %.2f×)", r.Ratio(), f)
	}
	return fmt.Sprintf("%.2f×", r.Ratio())
}

// signedMs formats d in whole milliseconds with its sign.
func signedMs(d time.Duration) string {
	ms := d.Round(time.Millisecond).Milliseconds()
	if ms < 0 {
		return fmt.Sprintf("−%d ms", -ms)
	}
	return fmt.Sprintf("+%d ms", ms)
}
