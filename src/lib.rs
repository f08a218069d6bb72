//! cursor_sdk: the Cursor agent SDK as a library.

pub mod bridge;
pub mod error;
pub mod proto;

pub use error::{Error, ErrorKind, RateLimit, Result};
