//! Finding the `cursor-sdk-bridge` launcher.
//!
//! Order: explicit path → `$CURSOR_SDK_BRIDGE_BIN` → the fetch-bridge cache → `PATH`. The first
//! two are the user's explicit choice, so a wrong value there is an error rather than a silent
//! fall-through to some other bridge. The environment is read through a closure so tests need not
//! mutate the process environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

pub const ENV_BRIDGE_BIN: &str = "CURSOR_SDK_BRIDGE_BIN";
pub const ENV_BRIDGE_CACHE: &str = "CURSOR_SDK_BRIDGE_CACHE";
/// Where `scripts/fetch-bridge.sh` installs the pinned bridge, relative to the cache directory.
pub const CACHE_RELATIVE_BIN: &str = "cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge";
pub const DEFAULT_CACHE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.cache/bridge");
pub const BRIDGE_FILE_NAME: &str = "cursor-sdk-bridge";
/// The only protocol this library speaks.
pub const PROTOCOL: &str = "sdk.v1";

/// Finds the bridge launcher (see the module docs for the order).
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    locate_with(explicit, &|key| std::env::var_os(key))
}

fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::BridgeStartFailed, msg)
}

/// [`locate`] with an injectable environment lookup.
pub fn locate_with(explicit: Option<&Path>, env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    let non_empty = |key: &str| env(key).filter(|v| !v.is_empty());
    if let Some(p) = explicit {
        return checked(p, "the explicit bridge path");
    }
    if let Some(p) = non_empty(ENV_BRIDGE_BIN) {
        return checked(Path::new(&p), &format!("${ENV_BRIDGE_BIN}"));
    }
    let mut tried = vec![
        "explicit path (none given)".to_string(),
        format!("${ENV_BRIDGE_BIN} (unset)"),
    ];

    let (cache_dir, cache_src) = match non_empty(ENV_BRIDGE_CACHE) {
        Some(dir) => (PathBuf::from(dir), format!("${ENV_BRIDGE_CACHE}")),
        None => (PathBuf::from(DEFAULT_CACHE_DIR), "built-in default".to_string()),
    };
    let cached = cache_dir.join(CACHE_RELATIVE_BIN);
    if is_executable(&cached) {
        check_manifest(&cached)?;
        return Ok(cached);
    }
    tried.push(format!(
        "cache {} ({cache_src}): {}",
        cached.display(),
        why_not(&cached)
    ));

    match env("PATH") {
        Some(path) if !path.is_empty() => {
            let mut dirs = Vec::new();
            for dir in std::env::split_paths(&path) {
                let candidate = dir.join(BRIDGE_FILE_NAME);
                if is_executable(&candidate) {
                    check_manifest(&candidate)?;
                    return Ok(candidate);
                }
                dirs.push(dir.display().to_string());
            }
            tried.push(format!("{BRIDGE_FILE_NAME} on PATH ({})", dirs.join(":")));
        }
        _ => tried.push("PATH (unset)".to_string()),
    }
    Err(fail(format!(
        "cursor-sdk-bridge not found; tried: {}. Run `make fetch-bridge`, `pip install cursor-sdk`, \
         or set ${ENV_BRIDGE_BIN}",
        tried.join("; ")
    )))
}

/// An explicitly named launcher must exist, be executable and speak our protocol.
fn checked(path: &Path, what: &str) -> Result<PathBuf> {
    if !is_executable(path) {
        return Err(fail(format!(
            "{what} {} is not a usable bridge: {}",
            path.display(),
            why_not(path)
        )));
    }
    check_manifest(path)?;
    Ok(path.to_path_buf())
}

fn why_not(path: &Path) -> &'static str {
    match std::fs::metadata(path) {
        Err(_) => "missing",
        Ok(m) if m.is_dir() => "a directory",
        Ok(_) => "not executable",
    }
}

pub(super) fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// What a packaged bridge's `manifest.json` says about it. Every field is optional: a missing or
/// non-string value is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The file this was read from.
    pub path: PathBuf,
    /// The cursor-sdk release the bridge ships in (`sdkVersion`, e.g. "1.1.0"): what
    /// [`crate::compat`] checks options against.
    pub sdk_version: Option<String>,
    /// The bridge's own version (`bridgeVersion`; "1.0.0" for every release so far).
    pub bridge_version: Option<String>,
    /// The protocol it speaks (`protocol`, e.g. "sdk.v1").
    pub protocol: Option<String>,
    /// The platform it was built for (`os`, `arch`, e.g. "linux", "x64").
    pub os: Option<String>,
    pub arch: Option<String>,
}

/// Reads `<launcher>/../../manifest.json`, where a packaged bridge keeps it (the launcher is
/// `<bridge>/bin/cursor-sdk-bridge`; like the launcher script itself, symlinks are not followed).
/// `Ok(None)` when there is no manifest: a `cursor-sdk-bridge` installed by pip on PATH is an
/// entry-point script without one. Unreadable or non-JSON manifests are errors.
pub fn manifest_of(launcher: &Path) -> Result<Option<Manifest>> {
    let Some(path) = launcher
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("manifest.json"))
    else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(format!("cannot read {}: {e}", path.display()))),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("bridge manifest {} is not valid JSON: {e}", path.display())))?;
    let field = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    Ok(Some(Manifest {
        sdk_version: field("sdkVersion"),
        bridge_version: field("bridgeVersion"),
        protocol: field("protocol"),
        os: field("os"),
        arch: field("arch"),
        path,
    }))
}

/// A packaged bridge has `<bin>/../manifest.json`; if it is there, it must say `sdk.v1`.
/// (A `cursor-sdk-bridge` installed by pip on PATH is an entry-point script without one.)
pub fn check_manifest(bin: &Path) -> Result<()> {
    let Some(manifest) = manifest_of(bin)? else {
        return Ok(());
    };
    match manifest.protocol.as_deref() {
        Some(PROTOCOL) => Ok(()),
        other => Err(fail(format!(
            "bridge {} speaks protocol {} according to {}, but this library needs \"{PROTOCOL}\"",
            bin.display(),
            other
                .map(|p| format!("\"{p}\""))
                .unwrap_or_else(|| "(none given)".into()),
            manifest.path.display()
        ))),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    /// A scratch directory, removed on drop.
    fn temp_dir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("cursor-sdk-locate-{tag}-"))
            .tempdir()
            .unwrap()
    }

    fn exe(path: &Path) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_path_buf()
    }

    fn env_of(pairs: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn order_explicit_env_cache_path() {
        let t = temp_dir("order");
        let explicit = exe(&t.path().join("explicit/cursor-sdk-bridge"));
        let from_env = exe(&t.path().join("env/cursor-sdk-bridge"));
        let cache = t.path().join("cache");
        let cached = exe(&cache.join(CACHE_RELATIVE_BIN));
        let path_dir = t.path().join("pathdir");
        let on_path = exe(&path_dir.join(BRIDGE_FILE_NAME));
        let empty = t.path().join("empty");

        let all = env_of(&[
            (ENV_BRIDGE_BIN, &from_env),
            (ENV_BRIDGE_CACHE, &cache),
            ("PATH", &path_dir),
        ]);
        assert_eq!(locate_with(Some(&explicit), &all).unwrap(), explicit);
        assert_eq!(locate_with(None, &all).unwrap(), from_env);
        let no_bin = env_of(&[(ENV_BRIDGE_CACHE, &cache), ("PATH", &path_dir)]);
        assert_eq!(locate_with(None, &no_bin).unwrap(), cached);
        let no_cache = env_of(&[(ENV_BRIDGE_CACHE, &empty), ("PATH", &path_dir)]);
        assert_eq!(locate_with(None, &no_cache).unwrap(), on_path);
        // PATH with several entries: the first that has it.
        let joined = std::env::join_paths([empty.clone(), path_dir.clone()]).unwrap();
        let multi = env_of(&[(ENV_BRIDGE_CACHE, &empty), ("PATH", Path::new(&joined))]);
        assert_eq!(locate_with(None, &multi).unwrap(), on_path);
    }

    #[test]
    fn nothing_found_lists_every_place_tried() {
        let t = temp_dir("none");
        let cache = t.path().join("cache");
        let p1 = t.path().join("p1");
        let p2 = t.path().join("p2");
        let joined = std::env::join_paths([p1.clone(), p2.clone()]).unwrap();
        let env = env_of(&[(ENV_BRIDGE_CACHE, &cache), ("PATH", Path::new(&joined))]);
        let e = locate_with(None, &env).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
        let m = &e.message;
        for needle in [
            "explicit path (none given)",
            "$CURSOR_SDK_BRIDGE_BIN (unset)",
            &cache.join(CACHE_RELATIVE_BIN).display().to_string(),
            "$CURSOR_SDK_BRIDGE_CACHE",
            &p1.display().to_string(),
            &p2.display().to_string(),
            "make fetch-bridge",
        ] {
            assert!(m.contains(needle), "{needle:?} not in {m}");
        }
        // Without the cache variable, the built-in default is what was tried.
        if !Path::new(DEFAULT_CACHE_DIR).join(CACHE_RELATIVE_BIN).exists() {
            let e = locate_with(None, &env_of(&[])).unwrap_err();
            assert!(e.message.contains(DEFAULT_CACHE_DIR), "{}", e.message);
            assert!(e.message.contains("PATH (unset)"), "{}", e.message);
        }
    }

    #[test]
    fn bad_explicit_or_env_path_is_named() {
        let t = temp_dir("bad");
        let missing = t.path().join("nope/cursor-sdk-bridge");
        let e = locate_with(Some(&missing), &env_of(&[])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
        assert!(e.message.contains(&missing.display().to_string()) && e.message.contains("missing"));

        let plain = t.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = locate_with(Some(&plain), &env_of(&[])).unwrap_err();
        assert!(e.message.contains(&plain.display().to_string()) && e.message.contains("not executable"));

        let e = locate_with(None, &env_of(&[(ENV_BRIDGE_BIN, &plain)])).unwrap_err();
        assert!(e.message.contains("$CURSOR_SDK_BRIDGE_BIN") && e.message.contains("not executable"));

        let e = locate_with(Some(t.path()), &env_of(&[])).unwrap_err();
        assert!(e.message.contains("a directory"), "{}", e.message);
    }

    #[test]
    fn manifest_protocol_is_checked() {
        let t = temp_dir("manifest");
        let bin = exe(&t.path().join("bridge/bin/cursor-sdk-bridge"));
        let manifest = t.path().join("bridge/manifest.json");
        // No manifest: fine.
        assert_eq!(locate_with(Some(&bin), &env_of(&[])).unwrap(), bin);
        std::fs::write(&manifest, r#"{"protocol":"sdk.v1","bridgeVersion":"1.0.0"}"#).unwrap();
        assert_eq!(locate_with(Some(&bin), &env_of(&[])).unwrap(), bin);
        std::fs::write(&manifest, r#"{"protocol":"sdk.v2"}"#).unwrap();
        let e = locate_with(Some(&bin), &env_of(&[])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
        assert!(
            e.message.contains("\"sdk.v2\"") && e.message.contains("needs \"sdk.v1\""),
            "{}",
            e.message
        );
        std::fs::write(&manifest, r#"{"bridgeVersion":"1"}"#).unwrap();
        assert!(locate_with(Some(&bin), &env_of(&[]))
            .unwrap_err()
            .message
            .contains("(none given)"));
        std::fs::write(&manifest, "{oops").unwrap();
        assert!(locate_with(Some(&bin), &env_of(&[]))
            .unwrap_err()
            .message
            .contains("not valid JSON"));
        // The same check applies to a bridge found in the cache.
        let cache = t.path().join("cache");
        let cached = exe(&cache.join(CACHE_RELATIVE_BIN));
        std::fs::write(
            cached.parent().unwrap().parent().unwrap().join("manifest.json"),
            r#"{"protocol":"x"}"#,
        )
        .unwrap();
        let e = locate_with(None, &env_of(&[(ENV_BRIDGE_CACHE, &cache)])).unwrap_err();
        assert!(e.message.contains("\"x\""), "{}", e.message);
    }

    #[test]
    fn manifest_of_reads_what_is_there() {
        let t = temp_dir("manifest-of");
        let bin = exe(&t.path().join("bridge/bin/cursor-sdk-bridge"));
        let path = t.path().join("bridge/manifest.json");
        assert_eq!(manifest_of(&bin).unwrap(), None);
        std::fs::write(
            &path,
            r#"{"bridgeVersion":"1.0.0","sdkVersion":"1.0.26","os":"linux","arch":"x64","protocol":"sdk.v1","extra":1}"#,
        )
        .unwrap();
        let m = manifest_of(&bin).unwrap().unwrap();
        assert_eq!(
            m,
            Manifest {
                path: path.clone(),
                sdk_version: Some("1.0.26".into()),
                bridge_version: Some("1.0.0".into()),
                protocol: Some("sdk.v1".into()),
                os: Some("linux".into()),
                arch: Some("x64".into()),
            }
        );
        // Absent or non-string fields are None, not errors.
        std::fs::write(&path, r#"{"protocol":"sdk.v1","sdkVersion":126}"#).unwrap();
        let m = manifest_of(&bin).unwrap().unwrap();
        assert_eq!((m.sdk_version, m.protocol.as_deref()), (None, Some("sdk.v1")));
        std::fs::write(&path, "[]").unwrap();
        assert_eq!(manifest_of(&bin).unwrap().unwrap().sdk_version, None);
        std::fs::write(&path, "{oops").unwrap();
        let e = manifest_of(&bin).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
        // A bare file name has no bridge directory above it.
        assert_eq!(manifest_of(Path::new("cursor-sdk-bridge")).unwrap(), None);
    }
}
