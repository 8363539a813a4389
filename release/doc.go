// Command release checks that headgate's library modules can be published
// and installed as a new user would install them. It is a development tool,
// not published itself.
//
//	go run . check -version v0.1.0 core resty retryablehttp gokit redisstore telemetry
//
// check does, in order:
//
//  1. reads each library module's go.mod and fails if it requires a sibling
//     (github.com/headgate-go/headgate/...) at any version other than
//     -version: a replace is ignored in a dependency, so the require is what
//     a user's go command asks the proxy for;
//  2. packs each module at -version with golang.org/x/mod/zip, as a tag
//     <dir>/<version> would publish it, into a module proxy directory
//     (<path>/@v/list, .info, .mod, .zip);
//  3. in a new temporary directory outside the workspace (GOWORK=off), with
//     GOPROXY=file://<that directory>,<the usual proxy>, GOFLAGS=-mod=mod,
//     GONOSUMDB for headgate's modules and a module cache of its own (so a
//     module packed by an earlier run is never reused), runs go get for
//     every module at -version, then go vet, go build and the program in
//     testdata/consumer, which wires the three adapters, redisstore and
//     telemetry as the README shows and sends one call through each adapter
//     to a loopback server.
//
// pack does step 2 alone, into -out.
package main
