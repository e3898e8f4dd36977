// Package testutil holds helpers that tests of several packages share.
// It is a normal package so that they can import it; nothing outside
// _test.go files should.
package testutil
