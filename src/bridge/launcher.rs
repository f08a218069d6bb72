//! How a located launcher is started. The packaged `bin/cursor-sdk-bridge` is a three-line `sh`
//! script (`env` → `sh` → `dirname` → node) that adds nothing but finding node next to itself;
//! those extra processes cost 5–20 ms of every start-up on a loaded machine. When the launcher
//! is exactly that script, its node is started directly with the same arguments; any other
//! launcher (a newer bridge, a wrapper, a test double) runs as it is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The launcher shipped in `cursor-sdk` 1.1.0, apart from trailing whitespace.
const PACKAGED_SCRIPT: &str = "#!/usr/bin/env sh\n\
DIR=\"$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd)\"\n\
\"$DIR/node\" \"$DIR/../dist/bin/cursor-sdk-bridge.js\" \"$@\"";

/// The program to run and its arguments: node and the bridge's entry script for the packaged
/// launcher, else the launcher itself.
pub fn command(launcher: &Path, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
    match packaged_node(launcher) {
        Some((node, script)) => {
            let mut all = vec![script.into_os_string()];
            all.extend(args.iter().cloned());
            (node, all)
        }
        None => (launcher.to_path_buf(), args.to_vec()),
    }
}

/// `(node, entry script)` when `launcher` is the packaged script and both files are where it
/// would look: `$DIR` is the launcher's directory as given, made absolute without resolving
/// symlinks (what `cd` + `pwd` do).
fn packaged_node(launcher: &Path) -> Option<(PathBuf, PathBuf)> {
    let meta = std::fs::metadata(launcher).ok()?;
    if meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(launcher).ok()?;
    if text.trim_end() != PACKAGED_SCRIPT {
        return None;
    }
    let dir = std::path::absolute(launcher.parent()?).ok()?;
    let node = dir.join("node");
    let script = dir.join("../dist/bin/cursor-sdk-bridge.js");
    (super::locate::is_executable(&node) && script.is_file()).then_some((node, script))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_packaged_launcher_starts_its_node_directly() {
        let d = tempfile::tempdir().unwrap();
        let launcher = d.path().join("bridge/bin/cursor-sdk-bridge");
        write(&launcher, &format!("{PACKAGED_SCRIPT}\n"), 0o755);
        let args: Vec<OsString> = vec!["--workspace".into(), "/w".into()];
        // No node next to it yet: the launcher runs as it is.
        assert_eq!(command(&launcher, &args), (launcher.clone(), args.clone()));
        write(&d.path().join("bridge/bin/node"), "", 0o755);
        write(&d.path().join("bridge/dist/bin/cursor-sdk-bridge.js"), "", 0o644);
        let (program, all) = command(&launcher, &args);
        assert_eq!(program, d.path().join("bridge/bin/node"));
        assert_eq!(
            all[0],
            d.path()
                .join("bridge/bin/../dist/bin/cursor-sdk-bridge.js")
                .into_os_string()
        );
        assert_eq!(&all[1..], &args[..]);
        // A node that cannot run: the launcher again.
        write(&d.path().join("bridge/bin/node"), "", 0o644);
        assert_eq!(command(&launcher, &args).0, launcher);
    }

    #[test]
    fn any_other_launcher_runs_as_it_is() {
        let d = tempfile::tempdir().unwrap();
        write(&d.path().join("bin/node"), "", 0o755);
        write(&d.path().join("dist/bin/cursor-sdk-bridge.js"), "", 0o644);
        let launcher = d.path().join("bin/cursor-sdk-bridge");
        let edited = PACKAGED_SCRIPT.replace("\"$@\"", "--inspect \"$@\"");
        for text in [edited.as_str(), "#!/bin/sh\nexec node bridge.js \"$@\"\n", ""] {
            write(&launcher, text, 0o755);
            assert_eq!(command(&launcher, &[]).0, launcher, "{text:?}");
        }
        assert_eq!(command(&d.path().join("missing"), &[]).0, d.path().join("missing"));
    }
}
