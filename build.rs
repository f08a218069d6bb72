//! Generates the `sdk.v1` protobuf types (prost) and their proto3 JSON mapping (pbjson) from the
//! vendored `proto/` files, with a pure-Rust compiler so no system `protoc` is needed; generates
//! the C header from `src/ffi` with cbindgen (annotated for importers by `header_annotations`);
//! sets the shared library's ABI name.

#[path = "build/header_annotations.rs"]
mod header_annotations;

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let protos: Vec<PathBuf> = std::fs::read_dir("proto/sdk/v1")
        .expect("proto/sdk/v1")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    println!("cargo:rerun-if-changed=proto");

    let fds = protox::compile(&protos, ["proto"]).expect("compile proto/sdk/v1");
    let descriptor_path = out.join("sdk_v1_descriptor.bin");
    std::fs::write(&descriptor_path, prost::Message::encode_to_vec(&fds)).expect("write descriptors");

    prost_build::Config::new()
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)
        .expect("prost codegen");

    let descriptors = std::fs::read(&descriptor_path).expect("read descriptors");
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)
        .expect("register descriptors")
        .build(&[".sdk.v1"])
        .expect("pbjson codegen");

    header(&out);
    soname();
}

/// Writes `$OUT_DIR/cursor_sdk.h`; `make header` copies it to `include/`, and a test checks the
/// committed copy is current.
fn header(out: &std::path::Path) {
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build/header_annotations.rs");
    let version = std::env::var("CARGO_PKG_VERSION").expect("version");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    let mut config = cbindgen::Config::from_file("cbindgen.toml").expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/* The version this header belongs to; cursor_sdk_version() gives the library's. */\n\
         #define CURSOR_SDK_VERSION \"{version}\"\n\
         #define CURSOR_SDK_VERSION_MAJOR {major}\n\
         #define CURSOR_SDK_VERSION_MINOR {minor}\n\
         #define CURSOR_SDK_VERSION_PATCH {patch}\n\
         /* MAJOR * 10000 + MINOR * 100 + PATCH; cursor_sdk_version_number() gives the library's. */\n\
         #define CURSOR_SDK_VERSION_NUMBER {number}\n\
         /* The ABI major: the shared library is libcursor_sdk.so.CURSOR_SDK_ABI_VERSION. */\n\
         #define CURSOR_SDK_ABI_VERSION {ABI}\n{macros}",
        macros = header_annotations::MACROS,
        number = major * 10000 + minor * 100 + patch
    ));
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"))
        .with_config(config)
        .generate()
        .expect("cbindgen")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("cbindgen wrote UTF-8");
    std::fs::write(out.join("cursor_sdk.h"), header_annotations::annotate(&generated)).expect("write cursor_sdk.h");
}

/// The shared library's ABI major in its name (`libcursor_sdk.so.0`), so consumers link to an
/// ABI, not to a build.
const ABI: u32 = 0;

fn soname() {
    match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("linux") => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcursor_sdk.so.{ABI}"),
        Ok("macos") => println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libcursor_sdk.{ABI}.dylib"),
        _ => {}
    }
}
