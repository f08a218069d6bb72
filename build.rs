//! Generates the `sdk.v1` protobuf types and their proto3 JSON mapping (`proto_codegen`, shared
//! with the bridge double); generates
//! the C header from `src/ffi` with cbindgen (annotated for importers by `header_annotations`);
//! sets the shared library's ABI name.

#[path = "build/header_annotations.rs"]
mod header_annotations;
#[path = "build/proto_codegen.rs"]
mod proto_codegen;

use std::path::{Path, PathBuf};

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    proto_codegen::generate(Path::new("proto"), &out, false);

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
