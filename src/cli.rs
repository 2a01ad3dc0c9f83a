//! TODO: module cli
