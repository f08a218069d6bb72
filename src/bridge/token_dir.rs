//! The bridge's token directory, and the proof that it is the one the bridge made for us.
//!
//! The bridge writes its token to `mkdtemp("$TMPDIR/cursor-sdk-bridge-XXXXXX")/auth-token`
//! (mode 0600 in a 0700 directory) and never deletes it, so we do. The ready line only *names*
//! the file, though: a directory is removed only when it is verifiably that one (our uid, a real
//! directory and not a symlink, mode 0700, made after the spawn started, holding nothing but an
//! `auth-token` regular file whose content is this launch's token), and never recursively:
//! `auth-token` is unlinked by name, then `rmdir` removes the directory only if it is empty.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The one file the bridge writes into its directory.
pub const TOKEN_FILE_NAME: &str = "auth-token";
const DIR_PREFIX: &str = "cursor-sdk-bridge-";
/// Filesystem timestamps come from a coarse clock that may lag the one we read by a tick.
const CLOCK_SLACK: Duration = Duration::from_millis(100);

/// A token directory verified to be this launch's.
#[derive(Debug)]
pub struct TokenDir {
    path: PathBuf,
    token: String,
    dev: u64,
    ino: u64,
}

impl TokenDir {
    /// `Some` only when `auth_token_file`'s directory passes every check (see the module doc).
    pub fn verify(auth_token_file: &Path, token: &str, spawned_at: SystemTime) -> Option<TokenDir> {
        let path = token_dir_of(auth_token_file)?.to_path_buf();
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let created = meta.created().ok().or_else(|| changed_at(&meta))?;
        if created + CLOCK_SLACK < spawned_at {
            return None;
        }
        let dir = TokenDir {
            path,
            token: token.to_string(),
            dev: meta.dev(),
            ino: meta.ino(),
        };
        matches!(dir.still_ours(), Some(Holds::Token)).then_some(dir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Re-checks (the directory could have changed since the ready line), then unlinks the
    /// token file and removes the directory if that left it empty. Never follows a symlink and
    /// never removes anything else. The same directory found already empty is removed too: the
    /// supervisor, which cleans up as well, can be killed between its unlink and its `rmdir`.
    pub fn remove(&self) {
        match self.still_ours() {
            Some(Holds::Token) => {
                let _ = std::fs::remove_file(self.path.join(TOKEN_FILE_NAME));
                let _ = std::fs::remove_dir(&self.path);
            }
            Some(Holds::Nothing) => {
                let _ = std::fs::remove_dir(&self.path);
            }
            None => {}
        }
    }

    /// The same directory as verified, with the shape the bridge gives it: holding this
    /// launch's token file and nothing else, or nothing at all.
    fn still_ours(&self) -> Option<Holds> {
        let meta = std::fs::symlink_metadata(&self.path).ok()?;
        let shape_ok = meta.file_type().is_dir()
            && (meta.dev(), meta.ino()) == (self.dev, self.ino)
            && owned_by_us(&meta)
            && meta.mode() & 0o7777 == 0o700;
        if !shape_ok {
            return None;
        }
        let mut only_token = true;
        let mut seen = 0;
        for e in std::fs::read_dir(&self.path).ok()? {
            seen += 1;
            only_token &= e.is_ok_and(|e| e.file_name() == OsStr::new(TOKEN_FILE_NAME));
        }
        match (only_token, seen) {
            (_, 0) => return Some(Holds::Nothing),
            (true, 1) => {}
            _ => return None,
        }
        let file = self.path.join(TOKEN_FILE_NAME);
        let file_ok = std::fs::symlink_metadata(&file)
            .is_ok_and(|m| m.file_type().is_file() && owned_by_us(&m) && m.len() < 4096);
        (file_ok && std::fs::read_to_string(&file).is_ok_and(|t| t.trim() == self.token)).then_some(Holds::Token)
    }
}

/// What a verified token directory holds at stop.
enum Holds {
    Token,
    Nothing,
}

fn owned_by_us(meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid cannot fail.
    meta.uid() == unsafe { libc::geteuid() }
}

/// The inode change time: a fallback where the filesystem keeps no creation time. Creating the
/// token file inside also updates it, so it is never earlier than the directory's creation.
fn changed_at(meta: &std::fs::Metadata) -> Option<SystemTime> {
    let secs = u64::try_from(meta.ctime()).ok()?;
    let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

/// The directory of the token file when its name has the bridge's shape
/// (`/…/cursor-sdk-bridge-XXXXXX/auth-token`, absolute, no newline for the supervisor's sake).
pub fn token_dir_of(auth_token_file: &Path) -> Option<&Path> {
    let dir = auth_token_file.parent()?;
    let name = dir.file_name()?.to_str()?;
    let ok = auth_token_file.is_absolute()
        && auth_token_file.file_name() == Some(OsStr::new(TOKEN_FILE_NAME))
        && name.starts_with(DIR_PREFIX)
        && name.len() > DIR_PREFIX.len()
        && !dir.to_str()?.contains('\n');
    ok.then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const TOKEN: &str = "tok-0123456789";

    #[test]
    fn token_dir_only_when_it_has_the_bridges_shape() {
        assert_eq!(
            token_dir_of(Path::new("/tmp/cursor-sdk-bridge-wbKZRp/auth-token")),
            Some(Path::new("/tmp/cursor-sdk-bridge-wbKZRp"))
        );
        assert_eq!(token_dir_of(Path::new("/tmp/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("/home/me/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("/tmp/cursor-sdk-bridge-/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("/tmp/cursor-sdk-bridge-x/notes.txt")), None);
        assert_eq!(token_dir_of(Path::new("cursor-sdk-bridge-x/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("")), None);
    }

    /// A directory made like the bridge makes it, inside `parent`.
    fn bridge_like(parent: &Path, name: &str) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dir.join(TOKEN_FILE_NAME), TOKEN).unwrap();
        dir
    }

    #[test]
    fn the_bridges_own_directory_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let start = SystemTime::now();
        let dir = bridge_like(t.path(), "cursor-sdk-bridge-aaaaaa");
        let v = TokenDir::verify(&dir.join(TOKEN_FILE_NAME), TOKEN, start).expect("verified");
        v.remove();
        assert!(!dir.exists());
    }

    /// Found by the fault matrix: the supervisor unlinked the token and was killed before its
    /// `rmdir`, which left an empty directory behind.
    #[test]
    fn the_same_directory_left_empty_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let start = SystemTime::now();
        let dir = bridge_like(t.path(), "cursor-sdk-bridge-bbbbbb");
        let v = TokenDir::verify(&dir.join(TOKEN_FILE_NAME), TOKEN, start).expect("verified");
        std::fs::remove_file(dir.join(TOKEN_FILE_NAME)).unwrap();
        v.remove();
        assert!(!dir.exists());
        // Empty but opened to others since: not the shape the bridge gives it, left alone.
        let open = bridge_like(t.path(), "cursor-sdk-bridge-cccccc");
        let w = TokenDir::verify(&open.join(TOKEN_FILE_NAME), TOKEN, start).expect("verified");
        std::fs::remove_file(open.join(TOKEN_FILE_NAME)).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        w.remove();
        assert!(open.exists());
    }

    #[test]
    fn anything_else_is_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let start = SystemTime::now();
        let file = |d: &Path| d.join(TOKEN_FILE_NAME);

        // Another token: not this launch's file.
        let d = bridge_like(t.path(), "cursor-sdk-bridge-other");
        assert!(TokenDir::verify(&file(&d), "another-token", start).is_none());
        // Open to others.
        let d = bridge_like(t.path(), "cursor-sdk-bridge-open");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(TokenDir::verify(&file(&d), TOKEN, start).is_none());
        // A user's file next to the token.
        let d = bridge_like(t.path(), "cursor-sdk-bridge-user");
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        assert!(TokenDir::verify(&file(&d), TOKEN, start).is_none());
        // A symlink to a directory of the right shape.
        let target = bridge_like(t.path(), "real-dir");
        let link = t.path().join("cursor-sdk-bridge-link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(TokenDir::verify(&file(&link), TOKEN, start).is_none());
        // Made before the spawn started.
        let later = SystemTime::now() + Duration::from_secs(5);
        let d = bridge_like(t.path(), "cursor-sdk-bridge-old");
        assert!(TokenDir::verify(&file(&d), TOKEN, later).is_none());

        // Verified, but a user's file appeared before stop: nothing is removed.
        let d = bridge_like(t.path(), "cursor-sdk-bridge-late");
        let v = TokenDir::verify(&file(&d), TOKEN, start).expect("verified");
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        v.remove();
        assert_eq!(std::fs::read_to_string(d.join("notes.txt")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(file(&d)).unwrap(), TOKEN);
        assert!(link.exists() && target.join(TOKEN_FILE_NAME).exists());
    }
}
