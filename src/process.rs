//! TODO: module process
