//! The committed C header is the generated one, and its version macros match Cargo.toml.

use std::ffi::CStr;

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cursor_sdk.h"));
const COMMITTED: &str = include_str!("../include/cursor_sdk.h");

#[test]
fn committed_header_is_current() {
    assert!(
        GENERATED == COMMITTED,
        "include/cursor_sdk.h is stale: run `make header` and commit it"
    );
}

#[test]
fn version_macros_match_the_package_and_the_library() {
    let version = env!("CARGO_PKG_VERSION");
    let define = |name: &str| -> String {
        COMMITTED
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("{name} missing"))
            .trim()
            .to_string()
    };
    assert_eq!(define("CURSOR_SDK_VERSION"), format!("\"{version}\""));
    let parts: Vec<&str> = version.split('.').collect();
    assert_eq!(define("CURSOR_SDK_VERSION_MAJOR"), parts[0]);
    assert_eq!(define("CURSOR_SDK_VERSION_MINOR"), parts[1]);
    assert_eq!(define("CURSOR_SDK_VERSION_PATCH"), parts[2]);
    let runtime = unsafe { CStr::from_ptr(cursor_sdk::ffi::cursor_sdk_version()) };
    assert_eq!(runtime.to_str().unwrap(), version);
}

#[test]
fn every_exported_function_is_documented() {
    // cbindgen copies doc comments; a declaration without one above it is undocumented.
    let lines: Vec<&str> = COMMITTED.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let is_decl = l.starts_with("cursor_status ")
            || l.starts_with("const char *cursor_")
            || l.starts_with("void cursor_")
            || l.starts_with("bool cursor_")
            || l.starts_with("int32_t cursor_")
            || l.starts_with("int64_t cursor_")
            || l.starts_with("cursor_run_status_t ")
            || l.starts_with("cursor_event_kind_t ");
        if is_decl {
            assert!(i > 0 && lines[i - 1].starts_with("//"), "undocumented: {l}");
        }
    }
}
