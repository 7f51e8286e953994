// Package hosttests holds scenario tests that cross packages: two netramp
// stacks on an emulated wire in virtual time (transfers, loss, options,
// determinism, the ramp on the t14 path), and interop with gVisor's own TCP.
// The package has no code of its own outside its tests.
package hosttests
