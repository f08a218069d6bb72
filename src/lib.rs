//! cursor_sdk: the Cursor agent SDK as a library.

pub mod proto;
