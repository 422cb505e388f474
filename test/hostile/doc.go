// Package hostile holds the hostile input suite: hostile catalog images
// pushed to a real registry and hostile webhook, CloudEvents and API
// requests, all against one running `catalogsync serve` process. Each
// must end in a clear error (or a documented acceptance) without a crash,
// without a file written outside the store and with the previously
// published catalog still served byte for byte. See docs/reliability.md.
//
// Run it with: go test ./test/hostile/
package hostile
