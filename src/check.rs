//! TODO: module check
