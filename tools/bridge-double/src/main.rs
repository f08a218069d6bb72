//! cursor-sdk-bridge-double: a conformance double of cursor-sdk-bridge (test support only).

#[allow(dead_code, clippy::all)]
mod proto {
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.serde.rs"));
}

fn main() {
    eprintln!("cursor-sdk-bridge-double: not implemented yet");
    std::process::exit(2);
}
