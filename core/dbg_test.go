package core

import (
	"fmt"
	"os"
	"testing"
	"testing/synctest"

	"github.com/headgate-go/headgate/core/internal/quota"
)

func TestDbgBatch(t *testing.T) {
	if os.Getenv("DBG") == "" {
		t.Skip()
	}
	f, _ := os.Create("/tmp/dbg.trace")
	defer f.Close()
	quota.Trace = func(format string, a ...any) { fmt.Fprintf(f, format+"\n", a...) }
	defer func() { quota.Trace = nil }()
	synctest.Test(t, func(t *testing.T) {
		bt := issueBatch(fixedDelta)
		bt.told, bt.burst = PerSecond(100), 100
		r := runBatch(t, bt)
		t.Logf("429s %d makespan %v", r.refused, r.makespan)
	})
}
