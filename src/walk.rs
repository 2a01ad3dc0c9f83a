//! TODO: module walk
