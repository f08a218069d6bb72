//! The oldest supported bridge (cursor-sdk 1.0.26), offline: it starts and serves agents like the
//! pinned one, it silently drops the options `cursor_sdk::compat` lists, and the compat check
//! refuses exactly those for it.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use common::{real_bridge, Sandbox};
use cursor_sdk::bridge::manifest_of;
use cursor_sdk::compat::{check_agent_options, AGENT_FIELDS};
use cursor_sdk::{options, proto, Client, ErrorKind};
use prost::Message as _;

const OLD_VERSION: &str = "1.0.26";

/// The 1.0.26 bridge fetched by `make fetch-bridge`. Panics (never skips) when it is missing.
fn old_bridge() -> PathBuf {
    let pinned = real_bridge();
    let cache = pinned
        .ancestors()
        .nth(4)
        .expect("<cache>/cursor-sdk-1.1.0/bridge/bin/<launcher>");
    let bin = cache.join(format!("cursor-sdk-{OLD_VERSION}/bridge/bin/cursor-sdk-bridge"));
    assert!(
        bin.is_file(),
        "the old bridge is missing at {}: run `make fetch-bridge`",
        bin.display()
    );
    bin
}

fn old_client(sb: &Sandbox) -> Client {
    let mut o = sb.options();
    o.bridge_path = Some(old_bridge());
    Client::new(o).unwrap()
}

fn sdk_version(launcher: &Path) -> String {
    manifest_of(launcher)
        .unwrap()
        .unwrap_or_else(|| panic!("{} has no manifest", launcher.display()))
        .sdk_version
        .unwrap_or_else(|| panic!("{}'s manifest has no sdkVersion", launcher.display()))
}

#[test]
fn manifests_name_the_releases() {
    assert_eq!(sdk_version(&old_bridge()), OLD_VERSION);
    assert_eq!(sdk_version(&real_bridge()), "1.1.0");
    let m = manifest_of(&old_bridge()).unwrap().unwrap();
    assert_eq!(m.protocol.as_deref(), Some("sdk.v1"));
    assert_eq!(m.bridge_version.as_deref(), Some("1.0.0"));
}

#[test]
fn starts_pings_reports_its_version_and_manages_agents() {
    let sb = Sandbox::new();
    let client = old_client(&sb);
    client.ping().unwrap();
    let v = client.version().unwrap();
    assert_eq!(v.protocol_version, "sdk.v1");
    // Every release so far reports bridge version 1.0.0; only the manifest tells them apart.
    assert_eq!(v.bridge_version, "1.0.0");
    assert!(
        v.capabilities.iter().any(|c| c == "agent.create"),
        "{:?}",
        v.capabilities
    );

    let agent = client
        .create_agent_json(Some(r#"{"model":"composer-2","name":"old"}"#))
        .unwrap();
    assert_eq!(agent.model().unwrap().id, "composer-2");
    let info = agent.info().unwrap();
    assert_eq!((info.agent_id.as_str(), info.name.as_str()), (agent.id(), "old"));
    let listed: Vec<String> = client
        .agents(proto::ListAgentsOptions::default())
        .map(|a| a.unwrap().agent_id)
        .collect();
    assert_eq!(listed, vec![agent.id().to_string()]);
    agent.archive().unwrap();
    assert!(agent.info().unwrap().archived);
    agent.unarchive().unwrap();
    assert!(!agent.info().unwrap().archived);
    let e = client
        .get_agent("agent-no-such", proto::AgentOperationOptions::default())
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
}

/// `--verbose` arrived in 1.0.27; the launch leaves it out for this bridge instead of failing.
#[test]
fn verbose_client_starts_it_without_the_flag() {
    let sb = Sandbox::new();
    let mut o = sb.options();
    o.bridge_path = Some(old_bridge());
    o.verbose = true;
    let client = Client::new(o).unwrap();
    client.ping().unwrap();
    assert!(client.bridge_pid().is_some());
}

/// Options setting one field of the compat table, by its JSON path.
fn options_setting(field: &str) -> proto::AgentOptions {
    let json = match field {
        "tools" => r#"{"tools":[]}"#,
        "disallowedTools" => r#"{"disallowedTools":["shell"]}"#,
        "local.dirs" => r#"{"local":{"dirs":["/tmp"]}}"#,
        "cloud.metadata" => r#"{"cloud":{"metadata":{"team":"a"}}}"#,
        "cloud.openAsCursorGithubApp" => r#"{"cloud":{"openAsCursorGithubApp":false}}"#,
        "local.customTools.*.outputSchema" => {
            r#"{"local":{"customTools":{"lookup":{"inputSchema":{},"outputSchema":{"type":"object"}}}}}"#
        }
        other => panic!("old_bridge.rs has no options for the compat field {other}: add them"),
    };
    options::agent_options(Some(json)).unwrap()
}

#[test]
fn compat_check_refuses_every_table_field_for_this_bridge_only() {
    let old = sdk_version(&old_bridge());
    let pinned = sdk_version(&real_bridge());
    for f in AGENT_FIELDS {
        let opts = options_setting(f.field);
        let e = check_agent_options(&old, &opts).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        let name = f.field.replace('*', "lookup");
        assert!(
            e.message
                .starts_with(&format!("{name} needs cursor-sdk-bridge from cursor-sdk {}", f.since))
                && e.message.ends_with(&format!("(this bridge is {OLD_VERSION})")),
            "{}",
            e.message
        );
        check_agent_options(&pinned, &opts).unwrap();
    }
    // What both bridges honour passes on the old one too.
    let plain = options::agent_options(Some(r#"{"model":"composer-2","name":"n","local":{"cwd":"/tmp"}}"#)).unwrap();
    check_agent_options(&old, &plain).unwrap();
}

/// One CreateAgent as the library sends it (binary protobuf), bypassing the library so the
/// bridge's own reaction shows: the HTTP status and body.
fn raw_create_agent(client: &Client, opts: proto::AgentOptions) -> (u16, String) {
    let endpoint = client.bridge_endpoint().unwrap();
    let authority = endpoint.url.trim_start_matches("http://").trim_end_matches('/');
    let body = proto::CreateAgentRequest {
        options: Some(opts),
        ..Default::default()
    }
    .encode_to_vec();
    let mut s = TcpStream::connect(authority).unwrap();
    write!(
        s,
        "POST /sdk.v1.SdkAgentService/CreateAgent HTTP/1.1\r\nHost: {authority}\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/proto\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.token,
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {reply}"));
    (status, reply)
}

/// Why the check exists: 1.1.0 validates tool names, 1.0.26 never sees the fields and creates
/// the agent anyway. (The other table entries have no offline effect; their release was read
/// from the bridge sources, see `src/compat.rs`.)
#[test]
fn old_bridge_silently_drops_tool_fields_the_pinned_one_validates() {
    let sb = Sandbox::new();
    let old = old_client(&sb);
    let sb_pinned = Sandbox::new();
    let pinned = sb_pinned.client();
    for json in [
        r#"{"tools":["no_such_tool"]}"#,
        r#"{"disallowedTools":["no_such_tool"]}"#,
    ] {
        let opts = options::agent_options(Some(json)).unwrap();
        let (status, reply) = raw_create_agent(&pinned, opts.clone());
        assert_eq!(status, 400, "1.1.0 should refuse {json}: {reply}");
        assert!(reply.contains("Unknown tool name(s)"), "{reply}");
        let (status, reply) = raw_create_agent(&old, opts);
        assert_eq!(status, 200, "1.0.26 should accept (and drop) {json}: {reply}");
    }
}
