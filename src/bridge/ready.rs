//! The bridge's ready line: `cursor-sdk-bridge ready {json}` on stderr.
//!
//! Old bridges inlined the bearer token (`authToken`) in this line, so the line is never stored or
//! shown verbatim: [`redacted_ready_line`] is the only form that may reach logs or errors.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// The exact prefix (with its trailing space) that starts the ready line.
pub const READY_PREFIX: &str = "cursor-sdk-bridge ready ";

/// What the bridge announced in its ready line.
#[derive(Clone, PartialEq)]
pub struct ReadyInfo {
    pub server_version: String,
    /// The node process (not the `sh` launcher): the one to signal.
    pub pid: u32,
    pub host: String,
    pub port: u16,
    /// `url` as announced (or built from host and port when absent); use [`ReadyInfo::base_url`].
    pub url: String,
    /// Empty only for old bridges that inline the token instead.
    pub auth_token_file: PathBuf,
    /// The whole ready object, unknown keys included, with every inline token removed.
    pub raw: Value,
    /// Token inlined by old bridges; private and left out of `Debug` so it cannot leak.
    inline_token: Option<String>,
}

impl fmt::Debug for ReadyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadyInfo")
            .field("server_version", &self.server_version)
            .field("pid", &self.pid)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("url", &self.url)
            .field("auth_token_file", &self.auth_token_file)
            .field("raw", &self.raw)
            .field("inline_token", &self.inline_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ReadyInfo {
    /// `http://host:port`, from host and port (the port wins over `url`; IPv6 hosts in brackets).
    pub fn base_url(&self) -> String {
        format_base_url(&self.host, self.port)
    }

    /// The token an old bridge put in the ready line, if any.
    pub(crate) fn inline_token(&self) -> Option<&str> {
        self.inline_token.as_deref()
    }
}

pub(crate) fn format_base_url(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}

/// Parses one stderr line. `None`: not a ready line. `Some(Err)`: a ready line we cannot use.
/// Errors never quote the line (it may hold a token).
pub fn parse_ready_line(line: &str) -> Option<Result<ReadyInfo>> {
    let json = line.trim_end_matches(['\r', '\n']).strip_prefix(READY_PREFIX)?;
    Some(parse_ready_json(json))
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::BridgeStartFailed,
        format!("bad bridge ready line: {}", msg.into()),
    )
}

fn parse_ready_json(json: &str) -> Result<ReadyInfo> {
    let value: Value = serde_json::from_str(json).map_err(|e| bad(format!("malformed JSON ({e})")))?;
    let Value::Object(mut obj) = value else {
        return Err(bad("not a JSON object"));
    };
    let inline_token = take_tokens(&mut obj);

    match obj.get("schemaVersion") {
        Some(v) if v.as_u64() == Some(1) => {}
        other => return Err(bad(format!("unsupported schemaVersion {}", show(other)))),
    }
    for (key, want) in [("transport", "tcp"), ("protocol", "connect")] {
        if obj.get(key).and_then(Value::as_str) != Some(want) {
            return Err(bad(format!("{key} is {}, expected \"{want}\"", show(obj.get(key)))));
        }
    }
    let pid = obj
        .get("pid")
        .and_then(Value::as_u64)
        .filter(|p| *p > 0 && *p <= i32::MAX as u64)
        .ok_or_else(|| bad(format!("pid is {}", show(obj.get("pid")))))? as u32;

    let url_field = obj.get("url").and_then(Value::as_str).map(str::to_string);
    let from_url = url_field.as_deref().and_then(split_http_url);
    let host = match obj.get("host").and_then(Value::as_str) {
        Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']').to_string(),
        _ => from_url
            .as_ref()
            .map(|(h, _)| h.clone())
            .ok_or_else(|| bad("neither host nor a usable url"))?,
    };
    // `--port 80abc` gives port 80 and a url without a port: `port` is the truth when present.
    let port = match obj.get("port") {
        Some(p) => p
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p != 0)
            .ok_or_else(|| bad(format!("port is {}", show(Some(p)))))?,
        None => from_url
            .as_ref()
            .and_then(|(_, p)| *p)
            .ok_or_else(|| bad("neither port nor a url with a port"))?,
    };
    let auth_token_file = obj
        .get("authTokenFile")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    if auth_token_file.is_none() && inline_token.is_none() {
        return Err(bad("no authTokenFile"));
    }
    Ok(ReadyInfo {
        server_version: obj
            .get("serverVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        pid,
        url: url_field.unwrap_or_else(|| format_base_url(&host, port)),
        host,
        port,
        auth_token_file: auth_token_file.unwrap_or_default(),
        raw: Value::Object(obj),
        inline_token,
    })
}

/// A short rendering of a JSON value for error messages (values here are never secrets).
fn show(v: Option<&Value>) -> String {
    match v {
        None => "missing".to_string(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 40 {
                format!("{}…", s.chars().take(40).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Is this key a secret? `authToken` and friends, but not `authTokenFile` (a path).
fn is_token_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("token") && !k.ends_with("file")
}

/// Removes every token-like key; returns the first string token (what old bridges sent).
fn take_tokens(obj: &mut Map<String, Value>) -> Option<String> {
    let keys: Vec<String> = obj.keys().filter(|k| is_token_key(k)).cloned().collect();
    let mut token = None;
    for k in keys {
        if let Some(Value::String(s)) = obj.remove(&k) {
            if token.is_none() && !s.trim().is_empty() {
                token = Some(s.trim().to_string());
            }
        }
    }
    token
}

/// The ready line as it may appear in logs and errors: inline tokens removed, or a placeholder
/// when the JSON cannot be parsed (then we cannot know where a token would be).
pub(crate) fn redacted_ready_line(line: &str) -> String {
    let Some(json) = line.trim_end_matches(['\r', '\n']).strip_prefix(READY_PREFIX) else {
        return line.to_string();
    };
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(mut obj)) => {
            take_tokens(&mut obj);
            format!("{READY_PREFIX}{}", Value::Object(obj))
        }
        _ => format!("{READY_PREFIX}<unparseable, {} bytes, not shown>", json.len()),
    }
}

/// Splits `http://host[:port][/...]` into host (IPv6 without brackets) and port.
fn split_http_url(url: &str) -> Option<(String, Option<u16>)> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), Some(p.parse().ok()?))),
        None if !authority.is_empty() => Some((authority.to_string(), None)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL: &str = r#"cursor-sdk-bridge ready {"schemaVersion":1,"serverVersion":"1.0.0","pid":16928,"transport":"tcp","protocol":"connect","host":"127.0.0.1","port":46577,"url":"http://127.0.0.1:46577","authTokenFile":"/tmp/cursor-sdk-bridge-wbKZRp/auth-token","workspaceRef":"/tmp/probe","stateRoot":"~/.cursor/sdk-agent-store/736438e5ad40d3e2600891a4"}"#;

    fn parse_err(line: &str) -> String {
        match parse_ready_line(line) {
            Some(Err(e)) => {
                assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
                e.message
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn line(json: &str) -> String {
        format!("{READY_PREFIX}{json}")
    }

    #[test]
    fn real_ready_line() {
        let r = parse_ready_line(&format!("{REAL}\n")).unwrap().unwrap();
        assert_eq!(r.server_version, "1.0.0");
        assert_eq!(r.pid, 16928);
        assert_eq!(r.host, "127.0.0.1");
        assert_eq!(r.port, 46577);
        assert_eq!(r.url, "http://127.0.0.1:46577");
        assert_eq!(r.base_url(), "http://127.0.0.1:46577");
        assert_eq!(
            r.auth_token_file,
            PathBuf::from("/tmp/cursor-sdk-bridge-wbKZRp/auth-token")
        );
        assert_eq!(r.raw["workspaceRef"], "/tmp/probe");
        assert_eq!(r.inline_token(), None);
    }

    #[test]
    fn not_ready_lines() {
        for l in [
            "",
            "cursor-sdk-bridge SIGTERM received, shutting down",
            "cursor-sdk-bridge ready",
            " cursor-sdk-bridge ready {}",
            "cursor-sdk-bridge failed: Error: Unknown argument: --bogus",
        ] {
            assert!(parse_ready_line(l).is_none(), "{l:?}");
        }
    }

    #[test]
    fn malformed_json() {
        assert!(parse_err(&line("{\"schemaVersion\":1,")).contains("malformed JSON"));
        assert!(parse_err(&line("not json")).contains("malformed JSON"));
        assert!(parse_err(&line("[1,2]")).contains("not a JSON object"));
    }

    #[test]
    fn schema_transport_protocol_are_checked() {
        let base = r#""pid":1,"host":"127.0.0.1","port":5,"authTokenFile":"/t/a""#;
        let m = parse_err(&line(&format!(
            r#"{{"schemaVersion":2,"transport":"tcp","protocol":"connect",{base}}}"#
        )));
        assert!(m.contains("schemaVersion 2"), "{m}");
        let m = parse_err(&line(&format!(
            r#"{{"schemaVersion":"1","transport":"tcp","protocol":"connect",{base}}}"#
        )));
        assert!(m.contains("schemaVersion"), "{m}");
        let m = parse_err(&line(&format!(r#"{{"transport":"tcp","protocol":"connect",{base}}}"#)));
        assert!(m.contains("schemaVersion missing"), "{m}");
        let m = parse_err(&line(&format!(
            r#"{{"schemaVersion":1,"transport":"unix","protocol":"connect",{base}}}"#
        )));
        assert!(m.contains("transport is \"unix\""), "{m}");
        let m = parse_err(&line(&format!(
            r#"{{"schemaVersion":1,"transport":"tcp","protocol":"grpc",{base}}}"#
        )));
        assert!(m.contains("protocol is \"grpc\""), "{m}");
        let m = parse_err(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","host":"h","port":5,"authTokenFile":"/t"}"#,
        ));
        assert!(m.contains("pid"), "{m}");
        let m = parse_err(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"h","port":5}"#,
        ));
        assert!(m.contains("authTokenFile"), "{m}");
        let m = parse_err(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"h","port":70000,"authTokenFile":"/t"}"#,
        ));
        assert!(m.contains("port"), "{m}");
    }

    #[test]
    fn unknown_keys_are_ignored_and_kept_in_raw() {
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"127.0.0.1","port":5,"authTokenFile":"/t","future":{"x":[1]}}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.raw["future"]["x"][0], 1);
    }

    #[test]
    fn port_wins_over_url() {
        // `--port 80abc`: port 80, url without a port.
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"127.0.0.1","port":80,"url":"http://127.0.0.1","authTokenFile":"/t"}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.base_url(), "http://127.0.0.1:80");
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"127.0.0.1","port":4000,"url":"http://127.0.0.1:5000","authTokenFile":"/t"}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.port, 4000);
        assert_eq!(r.base_url(), "http://127.0.0.1:4000");
        assert_eq!(r.url, "http://127.0.0.1:5000");
        // Without port and host, the url supplies both.
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"url":"http://localhost:6000/","authTokenFile":"/t"}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("localhost", 6000));
    }

    #[test]
    fn ipv6_host_is_bracketed() {
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"::1","port":41553,"url":"http://[::1]:41553","authTokenFile":"/t"}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(r.host, "::1");
        assert_eq!(r.base_url(), "http://[::1]:41553");
        let r = parse_ready_line(&line(
            r#"{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"url":"http://[::1]:41553","authTokenFile":"/t"}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 41553));
        assert_eq!(r.base_url(), "http://[::1]:41553");
        assert_eq!(format_base_url("[::1]", 9), "http://[::1]:9");
    }

    #[test]
    fn inline_token_is_redacted_everywhere() {
        let secret = "s3cr3t-T0KEN-abcdefghijklmnopqrstuvwxyz0123";
        let l = line(&format!(
            r#"{{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":3,"host":"127.0.0.1","port":5,"authToken":"{secret}"}}"#
        ));
        let r = parse_ready_line(&l).unwrap().unwrap();
        assert_eq!(r.inline_token(), Some(secret));
        assert!(r.raw.get("authToken").is_none());
        assert!(!r.raw.to_string().contains(secret));
        assert!(!format!("{r:?}").contains(secret));
        assert!(!redacted_ready_line(&l).contains(secret));
        assert!(redacted_ready_line(&l).starts_with(READY_PREFIX));
        // A bad ready line with a token: the error does not quote it either.
        let bad = line(&format!(r#"{{"schemaVersion":9,"authToken":"{secret}"}}"#));
        assert!(!parse_err(&bad).contains(secret));
        assert!(!redacted_ready_line(&bad).contains(secret));
        let broken = line(&format!(r#"{{"authToken":"{secret}""#));
        assert!(!parse_err(&broken).contains(secret));
        assert!(!redacted_ready_line(&broken).contains(secret));
        // authTokenFile is a path, not a secret: it stays.
        assert!(redacted_ready_line(REAL).contains("authTokenFile"));
    }
}
