//! The bridge's ready line (`parse_ready_line`) and its `manifest.json` (`manifest_of`,
//! `check_manifest`). Input: `[selector][text…]`; an even selector parses `text` as one stderr
//! line, an odd one writes it as a packaged bridge's manifest and reads it back.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cursor_sdk::bridge::{check_manifest, manifest_of, parse_ready_line, READY_PREFIX};
use cursor_sdk::ErrorKind;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Is this key one the ready parser must strip (a token, not a token *file*)?
fn is_token_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("token") && !k.ends_with("file")
}

fn ready(line: &str) {
    let Some(parsed) = parse_ready_line(line) else {
        assert!(
            !line.trim_end_matches(['\r', '\n']).starts_with(READY_PREFIX),
            "a ready line was taken for another line"
        );
        return;
    };
    let info = match parsed {
        Ok(info) => info,
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::BridgeStartFailed, "{e}");
            return;
        }
    };
    assert!(info.pid > 0 && info.port > 0, "{info:?}");
    assert!(!info.host.is_empty());
    assert!(info.base_url().starts_with("http://"));
    let Value::Object(raw) = &info.raw else {
        panic!("raw is not an object: {:?}", info.raw)
    };
    assert!(
        !raw.keys().any(|k| is_token_key(k)),
        "a token key is kept in raw: {raw:?}"
    );
    // The same line, parsed again from what was kept (tokens gone), must not fail on anything
    // but the now missing token (a bridge that inlined it has no authTokenFile).
    let again = format!("{READY_PREFIX}{}", info.raw);
    match parse_ready_line(&again).expect("still a ready line") {
        Ok(info2) => assert_eq!((info2.pid, info2.port, &info2.host), (info.pid, info.port, &info.host)),
        Err(e) => assert!(info.auth_token_file.as_os_str().is_empty(), "{e}"),
    }
}

/// A scratch `<dir>/bridge/bin/cursor-sdk-bridge` path whose `<dir>/bridge/manifest.json` each
/// run rewrites (under the fuzz crate's `target/`, removed by `scripts/fuzz.sh`).
fn launcher() -> &'static PathBuf {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/scratch")
            .join(format!("manifest-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bridge/bin")).expect("scratch directory");
        dir.join("bridge/bin/cursor-sdk-bridge")
    })
}

fn manifest(text: &[u8]) {
    let bin = launcher();
    let path = bin.parent().unwrap().parent().unwrap().join("manifest.json");
    std::fs::write(&path, text).expect("write the manifest");
    let json = std::str::from_utf8(text)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t).ok());
    match (manifest_of(bin), json) {
        (Ok(Some(m)), Some(v)) => {
            let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            assert_eq!(m.path, path);
            assert_eq!(m.protocol, field("protocol"));
            assert_eq!(m.sdk_version, field("sdkVersion"));
            assert_eq!(m.bridge_version, field("bridgeVersion"));
            assert_eq!((m.os, m.arch), (field("os"), field("arch")));
            let ok = check_manifest(bin);
            assert_eq!(ok.is_ok(), m.protocol.as_deref() == Some("sdk.v1"), "{ok:?}");
        }
        (Err(e), None) => {
            assert_eq!(e.kind, ErrorKind::BridgeStartFailed, "{e}");
            assert!(check_manifest(bin).is_err());
        }
        (got, json) => panic!("manifest_of gave {got:?} for a file whose JSON is {json:?}"),
    }
}

fuzz_target!(|input: &[u8]| {
    let [selector, text @ ..] = input else { return };
    if selector % 2 == 1 {
        manifest(text);
    } else if let Ok(line) = std::str::from_utf8(text) {
        ready(line);
    }
});
