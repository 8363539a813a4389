// Command github runs concurrent calls through go-github and a headgate
// budget of GitHub's primary limit, against a fake GitHub (offline,
// in-process) that pauses once with a secondary limit. The calls bypass
// go-github's own check, so a call it would refuse waits in the budget.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/go-github/v81/github"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

func main() {
	api, err := fake.GitHub(quotatest.Config{Requests: 20, Period: time.Second}) // GitHub's 5,000 an hour, scaled
	if err != nil {
		log.Fatal(err)
	}

	budget := core.MustBudget(core.PerSecond(20))
	client := github.NewClient(&http.Client{Transport: core.NewTransport(api.Transport(), budget)})
	client.BaseURL, _ = url.Parse("http://api.github.test/") // a real program keeps the default

	time.AfterFunc(time.Second, func() { api.PauseFor(time.Second) }) // a secondary limit
	ctx := context.WithValue(context.Background(), github.BypassRateLimitCheck, true)
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			for range 3 { // retry a rate-limit error at once: the budget waits out the pause
				_, _, err := client.Repositories.Get(ctx, "octocat", "Hello-World")
				var rl *github.RateLimitError
				var abuse *github.AbuseRateLimitError
				if !errors.As(err, &rl) && !errors.As(err, &abuse) {
					if err != nil {
						log.Fatal(err)
					}
					return
				}
			}
			log.Fatal("still refused after 3 attempts")
		})
	}
	wg.Wait()
	fmt.Printf("calls: %d, refused: %d (by the pause, before the budget heard of it)\n", api.Admitted(), api.Refused())
}
