module github.com/headgate-go/headgate/bench

go 1.26.0

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-kit/kit v0.13.0
	github.com/go-resty/resty/v2 v2.17.2
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/headgate-go/headgate/core v0.1.0
	github.com/headgate-go/headgate/gokit v0.1.0
	github.com/headgate-go/headgate/resty v0.1.0
	github.com/headgate-go/headgate/retryablehttp v0.1.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/time v0.16.0
)

require (
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/go-kit/log v0.2.0 // indirect
	github.com/go-logfmt/logfmt v0.5.1 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	golang.org/x/net v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240814211410-ddb44dafa142 // indirect
)

// This module is not published: it always builds against the sibling
// directories.
replace (
	github.com/headgate-go/headgate/core => ../core
	github.com/headgate-go/headgate/gokit => ../gokit
	github.com/headgate-go/headgate/resty => ../resty
	github.com/headgate-go/headgate/retryablehttp => ../retryablehttp
)
