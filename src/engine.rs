//! TODO: module engine
