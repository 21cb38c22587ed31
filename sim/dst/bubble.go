package dst

import (
	"errors"
	"testing"
	"testing/synctest"
)

// Bubble runs f inside a testing/synctest bubble: virtual time, and every
// goroutine f starts must end before Bubble returns. Under `go test` pass the
// test's t; a plain binary (cmd/relaysim) passes nil and gets a bubble
// through the testing package's own runner (runner.go), since synctest
// offers bubbles only to tests.
func Bubble(t *testing.T, f func(t *testing.T)) error {
	if t != nil {
		synctest.Test(t, f)
		if t.Failed() {
			return errors.New("bubble failed")
		}
		return nil
	}
	return bubbleOutsideTest(f)
}
