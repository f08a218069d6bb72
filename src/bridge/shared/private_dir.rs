//! The per-user runtime directory that shared bridges are registered in, and the checks that
//! make anything in it trustworthy: a real directory (not a symlink), ours, mode exactly 0700.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// The subdirectory made inside the user's runtime (or temporary) directory.
const SUBDIR: &str = "cursor-sdk";

/// `$XDG_RUNTIME_DIR/cursor-sdk` (Linux; `$TMPDIR/cursor-sdk` on other systems, where it is per
/// user) when that base is private to us, else `/tmp/cursor-sdk-<uid>`; created 0700 and
/// checked before use.
pub fn runtime_dir() -> Result<PathBuf> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const BASE_VAR: &str = "XDG_RUNTIME_DIR";
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const BASE_VAR: &str = "TMPDIR";
    let base = std::env::var_os(BASE_VAR)
        .map(PathBuf::from)
        .filter(|b| b.is_absolute() && check_private(b).is_ok());
    let dir = match base {
        Some(b) => b.join(SUBDIR),
        // SAFETY: getuid cannot fail.
        None => PathBuf::from(format!("/tmp/{SUBDIR}-{}", unsafe { libc::getuid() })),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(refused(&dir, &format!("cannot create it: {e}"))),
    }
    check_private(&dir)?;
    Ok(dir)
}

/// A directory we may trust: not a symlink (lstat), a directory, owned by us, mode 0700.
pub fn check_private(dir: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| refused(dir, &e.to_string()))?;
    if !meta.file_type().is_dir() {
        return Err(refused(dir, "not a directory (or a symlink)"));
    }
    // SAFETY: getuid cannot fail.
    if meta.uid() != unsafe { libc::getuid() } {
        return Err(refused(dir, &format!("owned by uid {}", meta.uid())));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode != 0o700 {
        return Err(refused(dir, &format!("mode {mode:o}, not 700")));
    }
    Ok(())
}

fn refused(dir: &Path, why: &str) -> Error {
    Error::new(
        ErrorKind::BridgeStartFailed,
        format!("shared bridge: refusing the runtime directory {}: {why}", dir.display()),
    )
}

/// A file in the runtime directory that we may trust: a regular file (not a symlink), ours, and
/// with exactly `mode` when given.
pub fn trusted_file(meta: &std::fs::Metadata, mode: Option<u32>) -> bool {
    // SAFETY: getuid cannot fail.
    meta.file_type().is_file()
        && meta.uid() == unsafe { libc::getuid() }
        && mode.is_none_or(|m| meta.permissions().mode() & 0o7777 == m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_private_directory_of_ours_is_trusted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::DirBuilder::new().mode(0o700).create(&p).unwrap();
        check_private(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_private(&p).unwrap_err().message.contains("mode 755"));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_private(&link).unwrap_err().message.contains("symlink"));
        assert!(check_private(&d.path().join("missing")).is_err());
    }
}
