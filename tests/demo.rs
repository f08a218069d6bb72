//! `make demo`'s program, run against the bridge double (a model turn) and the real bridge.

mod common;

use std::process::Command;

use common::Sandbox;

fn demo_bin() -> std::path::PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "-q", "--example", "demo", "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            v.get("executable")
                .and_then(|e| e.as_str())
                .map(std::path::PathBuf::from)
        })
        .find(|p| p.file_name().is_some_and(|n| n == "demo"))
        .unwrap()
}

fn demo(sb: &Sandbox, bridge: &std::path::Path, key: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(demo_bin());
    cmd.args(args)
        .current_dir(sb.path())
        .env("CURSOR_SDK_BRIDGE_BIN", bridge)
        .env("HOME", sb.path())
        .env("CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON", r#"[{"id":"composer-2"}]"#)
        .env_remove("CURSOR_SDK_BRIDGE_URL")
        .env_remove("CURSOR_API_KEY");
    if let Some(k) = key {
        cmd.env("CURSOR_API_KEY", k);
    }
    cmd.output().unwrap()
}

#[test]
fn without_a_key_it_prints_the_bridge_and_how_to_get_one() {
    let sb = Sandbox::new();
    let out = demo(&sb, &common::real_bridge(), None, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("protocol  sdk.v1"), "{stdout}");
    assert!(stdout.contains("agent.create"), "{stdout}");
    assert!(stdout.contains("CURSOR_API_KEY"), "{stdout}");
}

#[test]
fn with_a_key_it_streams_a_turn() {
    let sb = Sandbox::new();
    let out = demo(&sb, &common::double_bin(), Some("dummy"), &["scenario:normal Say hi"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Hello from the bridge double."), "{stdout}");
}

#[test]
fn a_failing_real_turn_prints_the_reason_and_exits_non_zero() {
    let sb = Sandbox::new();
    let out = demo(&sb, &common::real_bridge(), Some("dummy"), &["Say hi"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("Failed to connect to API key exchange endpoint"),
        "{stderr}"
    );
}
