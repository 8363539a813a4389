package matrix

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// runVirtualWire runs c as runVirtual does, over a wire of latency each way.
func runVirtualWire(t *testing.T, c Cell, latency time.Duration) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(virtualStart)) // instant, in virtual time
		env := &Env{Workload: Issue14, InProcess: true, Latency: latency}
		var err error
		if r, err = env.Run(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

var wireFigures = flag.String("wire.figures", "", "log the exact and 2× scenarios' figures (configured at the server's rate, and at twice it) over a wire of these latencies each way (comma-separated durations), for every in-process server and headgate client")

// TestWireFigures logs, with -wire.figures, the exact and 2× scenarios'
// figures (configured at the server's rate, and at twice it) of every
// in-process server and headgate client over a wire of each latency given
// (virtual time): `go test -run 'TestWireFigures$' -v ./matrix -args
// -wire.figures=0,2ms,20ms`. Real APIs answer 10-100 ms away; the
// matrix's cells have no latency. A measurement, not a want: requests in
// flight are not counted against Remaining (the wants are missed there;
// docs/BENCHMARKS.md).
func TestWireFigures(t *testing.T) {
	if *wireFigures == "" {
		t.Skip("-wire.figures not set")
	}
	var lats []time.Duration
	for _, s := range strings.Split(*wireFigures, ",") {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		lats = append(lats, d)
	}
	clients := *wireClients
	for _, srv := range Servers {
		if !srv.InProcess {
			continue
		}
		for _, scn := range []string{"exact", "2x"} {
			sc, _ := ScenarioByName(scn)
			for _, cl := range Clients {
				if !cl.Headgate || !strings.Contains(clients, cl.Name) {
					continue
				}
				line := fmt.Sprintf("%-4s %-80s %-18s", scn, srv.Name, cl.Name)
				for _, d := range lats {
					r := runVirtualWire(t, Cell{Server: srv, Scenario: sc, Client: cl}, d)
					line += fmt.Sprintf(" | %4v %4.1f%% %.3f×", d, r.RefusedPct(), r.Ratio())
				}
				t.Log(line)
			}
		}
	}
}

var wireClients = flag.String("wire.clients", "headgate transport,hgresty,hgretry,hgkit", "the headgate clients TestWireFigures runs")
