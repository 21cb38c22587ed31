// Package scenarios holds relaysim's stories and properties: the property
// tests (rapid state machines over a simulated cluster, in both relay
// modes), the seed sweep sample, and scenario files. It drives sim/ and
// judges with model/.
package scenarios
