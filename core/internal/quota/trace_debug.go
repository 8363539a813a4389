package quota

import (
	"fmt"
	"os"
)

// (A debugging aid, to be removed: HEADGATE_QUOTA_TRACE=file traces every model.)
func init() {
	if p := os.Getenv("HEADGATE_QUOTA_TRACE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			Trace = func(format string, a ...any) { fmt.Fprintf(f, format+"\n", a...) }
			debugf = Trace
		}
	}
}
