//! cursor_sdk: the Cursor agent SDK as a library.
//!
//! A blocking Rust core that finds, launches and supervises `cursor-sdk-bridge`, speaks its
//! `sdk.v1` protocol (Connect over HTTP/1.1, protobuf), and turns every failure into one typed
//! [`Error`].

pub mod agent;
pub mod bridge;
pub mod callback;
pub mod client;
pub mod compat;
pub mod error;
pub mod ffi;
pub mod fork;
pub mod fuzzing;
mod link;
pub mod log;
pub mod message;
pub mod options;
pub mod proto;
pub mod run;
mod send_watch;
mod struct_json;
pub mod tools;
pub mod transport;

pub use agent::{Agent, ArtifactReader};
pub use client::{BridgeEndpoint, BridgeVersion, Client, ClientOptions, Page, Pages};
pub use error::{Error, ErrorDetails, ErrorKind, RateLimit, Result};
pub use run::{Event, EventKind, Next, Run, RunResult, RunStatus};
pub use tools::{Store, Tool, ToolCall, ToolCompletion, ToolHandler, ToolOutcome};
