//! Rewriting the paths of query results relative to the workspace root, as the CLI, batch and
//! MCP print them ([`RelativePaths`]); paths outside the root stay absolute.

use std::path::{Path, PathBuf};

use crate::uri;

use super::*;

/// Rewrites the paths of a result relative to the workspace root (`src/a.py`), as the CLI and
/// batch print them. Paths outside the root stay absolute.
pub trait RelativePaths {
    fn make_relative(&mut self, root: &Path);
}

impl RelativePaths for Location {
    fn make_relative(&mut self, root: &Path) {
        self.path = PathBuf::from(uri::relative_display(&self.path, root));
    }
}

impl RelativePaths for LocationsResult {
    fn make_relative(&mut self, root: &Path) {
        self.locations.make_relative(root);
    }
}

impl RelativePaths for Symbol {
    fn make_relative(&mut self, root: &Path) {
        self.location.make_relative(root);
        self.children.make_relative(root);
    }
}

impl RelativePaths for SymbolsResult {
    fn make_relative(&mut self, root: &Path) {
        self.symbols.make_relative(root);
    }
}

impl RelativePaths for HierarchyItem {
    fn make_relative(&mut self, root: &Path) {
        self.location.make_relative(root);
    }
}

impl RelativePaths for Call {
    fn make_relative(&mut self, root: &Path) {
        self.item.make_relative(root);
        self.call_sites.make_relative(root);
    }
}

impl RelativePaths for CallHierarchyResult {
    fn make_relative(&mut self, root: &Path) {
        self.items.make_relative(root);
        self.calls.make_relative(root);
    }
}

impl RelativePaths for TypeHierarchyResult {
    fn make_relative(&mut self, root: &Path) {
        self.items.make_relative(root);
        self.types.make_relative(root);
    }
}

impl<T: RelativePaths> RelativePaths for Vec<T> {
    fn make_relative(&mut self, root: &Path) {
        for item in self {
            item.make_relative(root);
        }
    }
}
