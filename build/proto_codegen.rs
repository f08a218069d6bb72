//! The `sdk.v1` code generation shared by the library's and the bridge double's build scripts
//! (one codegen, so the two can never speak different versions of the protocol): prost types and
//! their proto3 JSON mapping (pbjson) from the vendored `proto/`, with a pure-Rust compiler so no
//! system `protoc` is needed.

use std::path::Path;

/// Generates `sdk.v1.rs` and `sdk.v1.serde.rs` into `out` from `proto_root/sdk/v1/*.proto`.
/// `ignore_unknown_json`: the JSON decoders skip keys the schema does not know, as the real
/// bridge does (the double); otherwise they refuse them, naming the key (the library: options
/// with a typo must fail).
pub fn generate(proto_root: &Path, out: &Path, ignore_unknown_json: bool) {
    let dir = proto_root.join("sdk/v1");
    let protos: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    println!("cargo:rerun-if-changed={}", proto_root.display());

    let fds = protox::compile(&protos, [proto_root]).expect("compile proto/sdk/v1");
    let descriptor_path = out.join("sdk_v1_descriptor.bin");
    std::fs::write(&descriptor_path, prost::Message::encode_to_vec(&fds)).expect("write descriptors");

    prost_build::Config::new()
        .out_dir(out)
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)
        .expect("prost codegen");

    let descriptors = std::fs::read(&descriptor_path).expect("read descriptors");
    let mut json = pbjson_build::Builder::new();
    json.out_dir(out);
    if ignore_unknown_json {
        json.ignore_unknown_fields();
    }
    json.register_descriptors(&descriptors)
        .expect("register descriptors")
        .build(&[".sdk.v1"])
        .expect("pbjson codegen");
}
