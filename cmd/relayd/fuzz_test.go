package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParsePeerAddrs: an accepted -peer-addr maps host:port to host:port.
func FuzzParsePeerAddrs(f *testing.F) {
	for _, s := range []string{"", "a:1=b:2", "a:1=b:2,c:3=d:4", "a:1=b:2,a:1=c:3", "=", "a=b", "[::1]:1=[::1]:2", " a:1 = b:2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parsePeerAddrs(s)
		if err != nil {
			return
		}
		for from, via := range m {
			for _, a := range []string{from, via} {
				_, _, err := net.SplitHostPort(a)
				require.NoError(t, err, "%q from %q", a, s)
			}
		}
	})
}
