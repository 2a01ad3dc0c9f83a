//! TODO: module uri
