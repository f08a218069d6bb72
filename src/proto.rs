//! Generated `sdk.v1` types: prost messages plus their proto3 JSON (serde) mapping.
#![allow(clippy::all, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/sdk.v1.rs"));
include!(concat!(env!("OUT_DIR"), "/sdk.v1.serde.rs"));
