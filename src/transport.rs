//! TODO: module transport
