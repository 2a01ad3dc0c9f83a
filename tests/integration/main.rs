//! lspc's integration tests: one test binary that runs the real `lspc` binary against the scripted
//! fixture server (`lspc-fixture-server`) and against real language servers installed on the
//! machine. Tests that need a server that is not installed skip themselves and say why.
//!
//! Modules: `check` (issue `lspc check`), `queries` (code-intelligence commands and batch),
//! `edits` (safe edits), `faults` (supervision and fault tolerance), `ide` (`lspc ide`, the
//! headless IDE), `gopls_load` (gopls when it cannot load the workspace), `gopls_phases` (gopls's
//! two-phase diagnostics), `pylsp_plugins` (pylsp
//! with no lint plugin that can run), `monorepo` (repository scale: project instances, baselines, changed files,
//! shards), `operations` (the one operation vocabulary across CLI, batch and MCP), `sessions`
//! (warm sessions), `settle` (per-server settle rules), `instant_route` (issue 15: answers written
//! by the thread that has them), `typed_answers` (issue 15: answers parsed and rendered without
//! `Value` trees, byte for byte as before); `support` holds the
//! `TestCommand` harness, temporary workspaces and `/proc` helpers; `temp_files` (issue 15: no
//! folder left in the temporary directory after a run); `web_servers` (the built-in HTML, CSS,
//! JSON and Dockerfile servers with no configuration).

mod check;
mod doctor;
mod edits;
mod faults;
mod fresh_eyes;
mod gopls_load;
mod gopls_phases;
mod ide;
mod instant_route;
mod mcp;
mod mcp_http;
mod monorepo;
mod operations;
mod project_files;
mod pylsp_plugins;
mod queries;
mod round_trip;
mod servers;
mod sessions;
mod settle;
mod support;
mod temp_files;
mod typed_answers;
mod web_servers;
