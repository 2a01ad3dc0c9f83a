//! TODO: module signals
