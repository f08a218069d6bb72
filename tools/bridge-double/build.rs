//! Generates the `sdk.v1` protobuf types (prost) and their proto3 JSON mapping (pbjson)
//! from the vendored `proto/` files, with a pure-Rust compiler so no system `protoc` is needed.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let protos: Vec<PathBuf> = std::fs::read_dir("../../proto/sdk/v1")
        .expect("../../proto/sdk/v1")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    println!("cargo:rerun-if-changed=../../proto");

    let fds = protox::compile(&protos, ["../../proto"]).expect("compile proto/sdk/v1");
    let descriptor_path = out.join("sdk_v1_descriptor.bin");
    std::fs::write(&descriptor_path, prost::Message::encode_to_vec(&fds)).expect("write descriptors");

    prost_build::Config::new()
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)
        .expect("prost codegen");

    let descriptors = std::fs::read(&descriptor_path).expect("read descriptors");
    pbjson_build::Builder::new()
        .ignore_unknown_fields()
        .register_descriptors(&descriptors)
        .expect("register descriptors")
        .build(&[".sdk.v1"])
        .expect("pbjson codegen");
}
