//! The `sdk.v1` types from the vendored `proto/`, by the library's own codegen
//! (`build/proto_codegen.rs`), with unknown JSON keys ignored as the real bridge does.

#[path = "../../build/proto_codegen.rs"]
mod proto_codegen;

use std::path::{Path, PathBuf};

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=../../build/proto_codegen.rs");
    proto_codegen::generate(Path::new("../../proto"), &out, true);
}
