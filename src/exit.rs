//! Exit statuses, shared by every command and frontend (README "Exit status"): 0 success (or
//! nothing at the failing severity), 1 findings (or "nothing found" for queries, an edit
//! refused, or a written edit that brought new errors), 2 usage or configuration error, 3 a language server failed, timed out or lacks the
//! feature. A broken stdout pipe exits 0.
//!
//! This module sits below every command so that commands do not depend on `cli`, which
//! dispatches to them.

/// Exit statuses shared by every command.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FOUND: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_SERVER: i32 = 3;
