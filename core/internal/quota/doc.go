// Package quota is the budget's feedback controller: one estimate of a
// server's quota, built from what its responses report, and one decision
// made from it — when may the next request go.
//
// Observations in, a decision out: the budget counts every request it
// grants (Model.Sent, on every path), hands every response over as a
// Report (Model.Observe) and asks when the j-th next request may go
// (Model.Next). Nothing outside this package reads or writes the model's
// state. Times are nanoseconds on the budget's clock.
//
// # The model
//
// A server's quota is a number of tokens each request spends one of, and
// that returns over time. The estimate holds:
//
//   - the requests sent, in grant order, with what each answer said
//     (sendLog): every report is placed at the request it answers — its
//     send time, by sequence — never at its arrival, and the requests in
//     flight are known;
//   - the freshest report of the quota (fresh): by its request's send
//     time, not its arrival, so a slow answer never overrides a newer one;
//   - its kind — a bucket that returns tokens continuously (GCRA, token
//     buckets, sliding counters once past their first window), or windows
//     that return the whole limit at a turn (fixed windows, anchored to
//     the clock or to a window's first request; sliding logs) — taken as
//     a bucket until reports contradict one more often than windows;
//   - for a bucket, bounds [lo, hi] on its refill rate, net of what others
//     spend, and the part of lo that what came back shows without the
//     stated resets (seen: a reset states what the server returns, which
//     others may share) (bucket.go); for windows, where the current window
//     turns and how long a window lasts (windows.go);
//   - the server's stated wait (pauseLo, pauseHi), a bracket when it is a
//     whole second that may have been rounded up;
//   - whether others spend from the same quota (foreign), and then this
//     budget's share of it, the pace's factor: its part of what was spent
//     lately, measured between reports decided in order (measureShare);
//   - when reports carry no quota at all, a pace: a factor on the configured
//     rate (configured with none, on the pace the last refusal cut) that
//     refusals cut and time grows back (pace.go).
//
// # The decision
//
// Next holds the j-th next request until the quota expected at the server
// when it arrives has a token for it: what the freshest report left, less
// the requests in flight, plus what returns by then under the kind and
// the rate the evidence makes likeliest (lo). A request not certain of a
// token may go sooner, on a guess, as soon as the most favourable reading
// allows (hi), while fewer guesses are out than the guess window allows;
// their answers narrow the estimate. The configured pace (the budget's GCRA)
// bounds every request besides.
//
// # Invariants
//
//  1. Every grant is counted, in grant order, before its answer can come
//     (Sent); an answer matches the request it answers by send time.
//  2. known <= at: the part of a wait Next reports as known is the
//     server's stated pause, never an estimate; only that part may fail a
//     caller's deadline at once.
//  3. No wait outlasts quiet + MaxWait: while callers wait, some request
//     goes at least that often, whatever the reports said.
//  4. The rate bounds hold the true rate when the reports are faithful and
//     the wire reorders no more than its measured spread (bucket.measure);
//     a contradiction widens them, never narrows them past the evidence.
//
// # Rules
//
// Each row is one rule: what triggers it, what it does, and the test that
// covers it (model_test.go unless named).
//
//	trigger                                   action                                              test
//	----------------------------------------- --------------------------------------------------- -----------------------------------------
//	a report older than the freshest           it informs the evidence, not the anchor             TestOlderReportNeverOverrides
//	Remaining left for the j-th after those    it goes now, pace or not                            TestRemainingCoversTheNextRequests
//	  in flight
//	none left, a bucket                        each token at 1/rate after the report's decision    TestBucketPacesAtTheLikeliestRate
//	none left, windows                         the limit again at the turn the resets place        TestWindowsWaitForTheTurn (kinds_test.go),
//	                                             or a window after the latest start seen           TestWindowTurnsNoSoonerThanItsLatestStart (windows_test.go)
//	a window's end stated to the millisecond   a window lasts no longer than the least bound the   TestWindowTurnsNoSoonerThanItsStatedEnd (windows_test.go),
//	                                             resets and the turns put on it; the latest next   TestWindowLengthIsTheLeastBound (windows_test.go)
//	                                             turn counts on that bound, never on a lower one
//	a configured rate no refusal bounds below  the configured rate is the likeliest                TestBucketPacesAtTheLikeliestRate
//	a refusal bounds the rate below the        the least rate the reports show                     TestConfiguredTooFastLearnsTheRate (kinds_test.go)
//	  configured one
//	a certain request refused                  the likeliest rate halves toward the least (cap)    TestCertainRefusalCapsTheRate,
//	                                             that came back (not what the resets state)        TestCertainRefusalCapsTowardWhatCameBack
//	a reset stated as a bucket's               bounds the rate; once contradicted, ignored         TestStatedResetBoundsABucket
//	a report a bucket does not explain         a strike against the bucket                         TestWholeReturnsAreWindows (kinds_test.go)
//	  (nothing back over a span, more back
//	  than its rate allows)
//	part of the quota came back                a strike against windows                            TestPartialReturnsAreABucket (kinds_test.go)
//	less left than own requests explain        others spend: the share                             TestForeignSpendTakesAShare,
//	  (decided after: sent once read; not a                                                        TestAnswerReadBeforeASendOrdersThem,
//	  refusal stating a wait and no quota)                                                         TestPauseRefusalIsNotOthersSpend
//	others spend: two reports decided in       the share (the pace's factor) is own ÷ all spent    TestShareIsOwnPartOfWhatWasSpent
//	  order                                      between them, older pairs weighing less;
//	                                             refusals cut it, only a measure grows it back
//	requests sent at one instant left a wider  others spend: the first share measured is own ÷    TestBurstShowsOthersSpend,
//	  spread than they and the requests that     (own + the spread unexplained)                    TestBurstCountsOwnRequestsDecidedAmongIt
//	  may be decided among them can fill, by
//	  two or more
//	others spend, the quota in windows         what is left spread evenly until the turn;          TestSharedWindowsSpreadWhatIsLeftWhileOthersSpend
//	                                             a window fallen by own spend alone: they stopped
//	Retry-After longer than a second, or fine  a pause: nothing goes before it, known              TestStatedWaitIsKnown
//	Retry-After of a whole second or less      a bracket: the estimate may go before its end       TestWholeSecondWaitIsABracket
//	  … a request sent inside it refused       its end stands, known                               TestRefusedInsideABracketWaitsForItsEnd
//	admitted, sent after the pause began       the pause is over                                   TestAdmittedAfterThePauseEndsIt
//	refused, sent before one admitted          stale: no wait, no backoff (unknown sends never)    TestRefusalOfAnUnknownSendIsNeverStale
//	a Transport's first burst                  half the configured burst until the first answer    TestFirstBurstWaitsForTheFirstAnswer
//	no rate configured, nothing reported yet   every request a guess, slow start from one          TestLearningStartsWithOneRequest
//	a guess refused                            window back to one; backoff doubles per round       TestRefusedGuessesBackOff,
//	                                             (refusals at one instant are one round)           TestGuessesRefusedAtOneInstantAreOneRound
//	no rate configured, the first refusal      slow start ends at half the requests out then (at   TestRefusedRoundEndsSlowStartAtHalf
//	  since one admitted                         least two); past it, one more a window
//	a refusal's stated wait ends               a request goes: the backoff and the readings wait   TestStatedWaitBoundsTheBackoff,
//	                                             no longer (Earliest: a fleet's pause, the same)   TestStatedWaitLetsOneGoAtItsEnd
//	no quota reported, a refusal               pace cut to what the server was seen to admit       TestPaceCutsToTheAdmittedRate
//	no rate configured, no quota reported,     pace cut from the pace refused to what came back    TestLearningCutsToWhatCameBackBetweenRefusals,
//	  a refusal                                  since the last cut's refusal, or by Decrease;     TestLearningRefillStartsAtTheLastCut,
//	                                             never below MinRate of the pace refused; the      TestLearningCutsNoDeeperThanMinRate,
//	                                             interval within [1 ns, MaxWait]                   TestLearningPaceNeverOverflows
//	  … nothing admitted since the last cut    no cut: the guesses' backoff waits for the quota    TestLearningCutsOnceUntilOneIsAdmitted
//	  … answers admitted since the cut         the pace climbs back, and past the pace refused     TestLearningPaceGrowsPastThePaceRefused
//	                                             up to 1/MinRate of it; before a first cut, no     TestLearningGrowsNothingBeforeItsFirstCut
//	                                             growth
//	  … others spend from the quota            the share never more than the whole of it          TestLearningShareIsNeverMoreThanTheQuota
//	no quota reported, refused since admitted  guesses until admitted, then back to the burst      TestNoQuotaRefusalProbesBack
//	no quota reported, refused past the        a burst only while its span holds no more than the  TestRefusalPastTheBurstReadsTheConfiguredRateAsSpans,
//	  configured burst in its span, beyond       server admitted in one; the pace goes on          TestSpansLetThePaceGoOn
//	  the wire's reordering
//	no answer, or one that says nothing        the request is lost: out of flight, guess freed     TestLostAnswersFreeTheGuesses
//	no guess left, one unanswered              the next goes when it counts as lost at the latest  TestUnansweredGuessWakesTheNext
//	callers silent for MaxWait                 one request goes                                    TestMaxWaitBoundsEveryWait
//	answers of a burst, in any order           the rate bounds hold the truth                      TestSimRateBoundsHoldTheTruth
//	any server, any wire                       no stall: a request at least every 30 s             TestSimNeverStalls
package quota
