module github.com/headgate-go/headgate/resty

go 1.26

require (
	github.com/go-resty/resty/v2 v2.17.2
	github.com/headgate-go/headgate/core v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.43.0 // indirect
)

// Local development: build against the sibling directories. A replace is
// ignored when this module is someone's dependency, so the require above is
// what a user gets (tags core/v0.1.0, resty/v0.1.0, …).
replace github.com/headgate-go/headgate/core => ../core
