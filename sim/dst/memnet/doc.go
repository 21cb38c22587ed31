// Package memnet is the simulation's in-memory network: listeners and
// connections over bounded pipes (bufconn's semantics), one-way cuts
// between addresses, dialers that crash, and connections that vanish. It
// does no TCP and no DNS, and imports the standard library only.
package memnet
