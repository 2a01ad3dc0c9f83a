//! lspc's integration tests: one test binary that runs the real `lspc` binary against the scripted
//! fixture server (`lspc-fixture-server`) and against real language servers installed on the
//! machine. Tests that need a server that is not installed skip themselves and say why.

mod check;
mod edits;
mod support;
