module github.com/headgate-go/headgate/gokit

go 1.26

require (
	github.com/go-kit/kit v0.13.0
	github.com/headgate-go/headgate/core v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/go-kit/log v0.2.0 // indirect
	github.com/go-logfmt/logfmt v0.5.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

// Local development: build against the sibling directories. A replace is
// ignored when this module is someone's dependency, so the require above is
// what a user gets (tags core/v0.1.0, resty/v0.1.0, …).
replace github.com/headgate-go/headgate/core => ../core
