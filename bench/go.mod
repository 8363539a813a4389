module github.com/headgate-go/headgate/bench

go 1.26.0

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-chi/httprate v0.16.1
	github.com/go-kit/kit v0.13.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/go-resty/resty/v2 v2.17.2
	github.com/gofiber/fiber/v2 v2.52.15
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/headgate-go/headgate/core v0.1.0
	github.com/headgate-go/headgate/gokit v0.1.0
	github.com/headgate-go/headgate/redisstore v0.1.0
	github.com/headgate-go/headgate/resty v0.1.0
	github.com/headgate-go/headgate/retryablehttp v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/time v0.16.0
)

require (
	github.com/andybalholm/brotli v1.1.0 // indirect
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-kit/log v0.2.0 // indirect
	github.com/go-logfmt/logfmt v0.5.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/philhofer/fwd v1.1.3-0.20240916144458-20a13a1f6b7c // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/tinylib/msgp v1.2.5 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.51.0 // indirect
	github.com/valyala/tcplisten v1.0.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240814211410-ddb44dafa142 // indirect
)

// This module is not published: it always builds against the sibling
// directories.
replace (
	github.com/headgate-go/headgate/core => ../core
	github.com/headgate-go/headgate/gokit => ../gokit
	github.com/headgate-go/headgate/redisstore => ../redisstore
	github.com/headgate-go/headgate/resty => ../resty
	github.com/headgate-go/headgate/retryablehttp => ../retryablehttp
)
