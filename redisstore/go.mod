module github.com/headgate-go/headgate/redisstore

go 1.26.0

require (
	github.com/headgate-go/headgate/core v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// Local development: build against the sibling directories. A replace is
// ignored when this module is someone's dependency, so the require above is
// what a user gets (tags core/v0.1.0, resty/v0.1.0, …).
replace github.com/headgate-go/headgate/core => ../core
