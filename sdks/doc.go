// Package sdks shows headgate under the official SDKs of OpenAI
// (github.com/openai/openai-go), Anthropic
// (github.com/anthropics/anthropic-sdk-go), GitHub
// (github.com/google/go-github) and Stripe (github.com/stripe/stripe-go):
// its tests run each real SDK against a fake provider (package fake) that
// enforces a real limit and speaks the API's headers and response shapes,
// and its examples (under examples/) are the lines that wire each one. The
// module is not published: it keeps the SDKs out of core and the adapters.
//
// Every SDK takes an *http.Client; give it one whose Transport is a
// core.NewTransport over the default transport. An SDK reads and closes
// response bodies itself, so the LLM usage is committed either by the
// Transport as the body passes (core.WithUsage) or after the call returns,
// from what the SDK decoded (core.WithCommit).
package sdks
