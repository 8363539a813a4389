package core

// Observers returns an Observer that passes each event to every one of
// obs, in order, so a budget can report to several places at once (a log
// and metrics):
//
//	core.WithObserver(core.Observers(core.SlogObserver(logger), metrics.Observe))
//
// Nil entries are skipped. With no observer left it returns nil (which
// WithObserver takes as "report nothing"), and with one it returns that
// observer itself. A panic in one observer reaches the budget's caller and
// the observers after it see nothing of that event.
func Observers(obs ...Observer) Observer {
	var list []Observer
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return func(e Event) {
		for _, o := range list {
			o(e)
		}
	}
}
