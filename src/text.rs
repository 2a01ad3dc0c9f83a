//! TODO: module text
