// Package readme holds the README's code snippets, compiled as the bodies
// of the functions in its test files; its test checks that every ```go
// block of the README is one of them, word for word (sdks/readme*_test.go
// holds the snippets that need the SDKs, compiled by the sdks module's
// tests).
package readme
