//! Options an older bridge would silently drop, refused before they are sent.
//!
//! Every bridge from cursor-sdk 1.0.26 on speaks `sdk.v1`, but `sdk.v1` grew fields after 1.0.26,
//! and a bridge ignores fields it does not know (protobuf keeps them as unknown fields; its JSON
//! reader ignores unknown keys). [`AGENT_FIELDS`] names, per field, the first cursor-sdk release
//! whose bridge honours it; it was found by comparing the `.proto` files and the bridge's
//! `dist/sdk-converters.js` / `dist/bridge-custom-tools.js` in every PyPI release from 1.0.26 to
//! 1.1.0, and the drop was seen on the wire against the 1.0.26 bridge. `SendOptions` has not
//! changed over that range, so only agent options (create and resume) are checked.
//!
//! The version is the bridge manifest's `sdkVersion` (see [`crate::bridge::manifest_of`]).
//! A version that does not parse as `MAJOR.MINOR.PATCH` (a suffix such as `-rc.1` or `+build` is
//! ignored) is allowed through: refusing options on a guess would be worse than the status quo.

use crate::error::{Error, ErrorKind, Result};
use crate::proto;

/// A field of `AgentOptions` (by its proto3 JSON path) and the first cursor-sdk release whose
/// bridge honours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSince {
    /// JSON path as a caller writes it; `*` stands for a custom tool's name.
    pub field: &'static str,
    /// First cursor-sdk release (`MAJOR.MINOR.PATCH`) whose bridge forwards the field.
    pub since: &'static str,
}

const TOOLS: FieldSince = FieldSince {
    field: "tools",
    since: "1.0.27",
};
const DISALLOWED_TOOLS: FieldSince = FieldSince {
    field: "disallowedTools",
    since: "1.0.27",
};
const LOCAL_DIRS: FieldSince = FieldSince {
    field: "local.dirs",
    since: "1.0.27",
};
const CLOUD_METADATA: FieldSince = FieldSince {
    field: "cloud.metadata",
    since: "1.0.27",
};
const CLOUD_GITHUB_APP: FieldSince = FieldSince {
    field: "cloud.openAsCursorGithubApp",
    since: "1.0.27",
};
const OUTPUT_SCHEMA: FieldSince = FieldSince {
    field: "local.customTools.*.outputSchema",
    since: "1.0.29",
};

/// Fields of `AgentOptions` that older bridges drop, oldest first.
pub const AGENT_FIELDS: &[FieldSince] = &[
    TOOLS,
    DISALLOWED_TOOLS,
    LOCAL_DIRS,
    CLOUD_METADATA,
    CLOUD_GITHUB_APP,
    OUTPUT_SCHEMA,
];

/// The first cursor-sdk release whose bridge knows `--verbose` (RPC logging on stderr); older
/// ones refuse to start with "Unknown argument: --verbose".
pub const VERBOSE_FLAG_SINCE: &str = "1.0.27";

/// Whether the bridge of cursor-sdk `sdk_version` accepts `--verbose`. Unknown or unparseable
/// versions are assumed to (as before this check existed).
pub fn accepts_verbose_flag(sdk_version: Option<&str>) -> bool {
    let needed = Version::parse(VERBOSE_FLAG_SINCE);
    match sdk_version.and_then(Version::parse) {
        Some(v) => needed.is_none_or(|n| v >= n),
        None => true,
    }
}

/// A release number, compared numerically part by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// Parses `MAJOR.MINOR.PATCH`, ignoring a `-pre-release` or `+build` suffix and surrounding
    /// whitespace; `None` for anything else.
    pub fn parse(text: &str) -> Option<Version> {
        let core = text.trim().split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u32>().ok())
                .flatten()
        });
        let v = Version(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    }
}

/// The table's fields that `opts` sets, each with the name to report (a custom tool's name
/// replaces `*`), in table order. Only settings an old bridge would lose count: an empty
/// `disallowedTools` is a no-op anyway, while an empty `tools` list means "no built-in tools".
fn fields_used(opts: &proto::AgentOptions) -> Vec<(String, FieldSince)> {
    let mut used = Vec::new();
    let mut mark = |name: String, entry: FieldSince| used.push((name, entry));
    if opts.tools.is_some() {
        mark("tools".into(), TOOLS);
    }
    if !opts.disallowed_tools.is_empty() {
        mark("disallowedTools".into(), DISALLOWED_TOOLS);
    }
    if let Some(local) = &opts.local {
        if !local.dirs.is_empty() {
            mark("local.dirs".into(), LOCAL_DIRS);
        }
        let mut with_schema: Vec<&String> = local
            .custom_tools
            .iter()
            .filter(|(_, def)| def.output_schema.is_some())
            .map(|(name, _)| name)
            .collect();
        with_schema.sort();
        for name in with_schema {
            mark(format!("local.customTools.{name}.outputSchema"), OUTPUT_SCHEMA);
        }
    }
    if let Some(cloud) = &opts.cloud {
        if !cloud.metadata.is_empty() {
            mark("cloud.metadata".into(), CLOUD_METADATA);
        }
        if cloud.open_as_cursor_github_app.is_some() {
            mark("cloud.openAsCursorGithubApp".into(), CLOUD_GITHUB_APP);
        }
    }
    used
}

/// Refuses `opts` with [`ErrorKind::Unsupported`] if it sets a field that the bridge of
/// cursor-sdk `sdk_version` would silently drop; the message names the first such field (in
/// [`AGENT_FIELDS`] order) and the release that has it. An unparseable version allows everything.
pub fn check_agent_options(sdk_version: &str, opts: &proto::AgentOptions) -> Result<()> {
    let Some(bridge) = Version::parse(sdk_version) else {
        return Ok(());
    };
    let mut used = fields_used(opts);
    used.sort_by_key(|(_, entry)| AGENT_FIELDS.iter().position(|f| f == entry));
    for (name, FieldSince { since: first, .. }) in used {
        if Version::parse(first).is_some_and(|needed| bridge < needed) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{name} needs cursor-sdk-bridge from cursor-sdk {first} or newer (this bridge is {})",
                    sdk_version.trim()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn versions_parse_and_compare_numerically() {
        assert_eq!(Version::parse("1.0.26"), Some(Version(1, 0, 26)));
        assert_eq!(Version::parse(" 1.1.0\n"), Some(Version(1, 1, 0)));
        assert_eq!(Version::parse("1.0.30-rc.1"), Some(Version(1, 0, 30)));
        assert_eq!(Version::parse("2.0.0+build.5"), Some(Version(2, 0, 0)));
        for bad in [
            "",
            "1",
            "1.0",
            "1.0.26.1",
            "v1.0.26",
            "1.x.0",
            "1..0",
            "1.0.-1",
            "1.0.99999999999",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
        // Numeric, not lexicographic: 1.0.9 < 1.0.10 < 1.1.0 < 10.0.0.
        let order = ["1.0.9", "1.0.10", "1.0.26", "1.1.0", "2.0.0", "10.0.0"];
        for pair in order.windows(2) {
            assert!(Version::parse(pair[0]) < Version::parse(pair[1]), "{pair:?}");
        }
    }

    #[test]
    fn table_is_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for f in AGENT_FIELDS {
            assert!(seen.insert(f.field), "{} listed twice", f.field);
            let v = Version::parse(f.since).unwrap_or_else(|| panic!("{} has a bad version", f.field));
            // Everything from 1.0.26 (the oldest supported bridge) up to 1.1.0 (the pinned one).
            assert!(Version(1, 0, 26) < v && v <= Version(1, 1, 0), "{f:?}");
        }
        assert!(AGENT_FIELDS
            .windows(2)
            .all(|w| Version::parse(w[0].since) <= Version::parse(w[1].since)));
    }

    fn every_field() -> proto::AgentOptions {
        let tool = proto::CustomToolDefinition {
            output_schema: Some(Default::default()),
            ..Default::default()
        };
        proto::AgentOptions {
            tools: Some(proto::ToolList { names: vec![] }),
            disallowed_tools: vec!["shell".into()],
            local: Some(proto::LocalAgentOptions {
                dirs: vec!["/a".into()],
                custom_tools: HashMap::from([("lookup".to_string(), tool)]),
                ..Default::default()
            }),
            cloud: Some(proto::CloudAgentOptions {
                metadata: HashMap::from([("k".to_string(), "v".to_string())]),
                open_as_cursor_github_app: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Options setting only the table entry `key`.
    fn only(key: &str) -> proto::AgentOptions {
        let all = every_field();
        let local = all.local.clone().unwrap();
        let cloud = all.cloud.clone().unwrap();
        let mut o = proto::AgentOptions::default();
        match key {
            "tools" => o.tools = all.tools,
            "disallowedTools" => o.disallowed_tools = all.disallowed_tools,
            "local.dirs" => {
                o.local = Some(proto::LocalAgentOptions {
                    dirs: local.dirs,
                    ..Default::default()
                })
            }
            "local.customTools.*.outputSchema" => {
                o.local = Some(proto::LocalAgentOptions {
                    custom_tools: local.custom_tools,
                    ..Default::default()
                })
            }
            "cloud.metadata" => {
                o.cloud = Some(proto::CloudAgentOptions {
                    metadata: cloud.metadata,
                    ..Default::default()
                })
            }
            "cloud.openAsCursorGithubApp" => {
                o.cloud = Some(proto::CloudAgentOptions {
                    open_as_cursor_github_app: cloud.open_as_cursor_github_app,
                    ..Default::default()
                })
            }
            other => panic!("no options for {other}"),
        }
        o
    }

    #[test]
    fn each_field_is_refused_before_its_release_and_allowed_from_it() {
        for f in AGENT_FIELDS {
            let opts = only(f.field);
            let name = f.field.replace('*', "lookup");
            let e = check_agent_options("1.0.26", &opts).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported);
            assert_eq!(
                e.message,
                format!(
                    "{name} needs cursor-sdk-bridge from cursor-sdk {} or newer (this bridge is 1.0.26)",
                    f.since
                )
            );
            let Version(a, b, c) = Version::parse(f.since).unwrap();
            let just_before = format!("{a}.{b}.{}", c - 1);
            assert!(
                check_agent_options(&just_before, &opts).is_err(),
                "{} on {just_before}",
                f.field
            );
            assert!(
                check_agent_options(f.since, &opts).is_ok(),
                "{} on {}",
                f.field,
                f.since
            );
            assert!(check_agent_options("1.1.0", &opts).is_ok(), "{} on 1.1.0", f.field);
        }
    }

    #[test]
    fn the_first_field_in_table_order_is_named() {
        let all = every_field();
        let e = check_agent_options("1.0.26", &all).unwrap_err();
        assert!(e.message.starts_with("tools needs"), "{}", e.message);
        // On 1.0.27 only the output schema is still missing.
        let e = check_agent_options("1.0.28", &all).unwrap_err();
        assert!(
            e.message
                .starts_with("local.customTools.lookup.outputSchema needs cursor-sdk-bridge from cursor-sdk 1.0.29"),
            "{}",
            e.message
        );
        assert!(check_agent_options("1.0.29", &all).is_ok());
    }

    #[test]
    fn settings_an_old_bridge_loses_nothing_by_dropping_pass() {
        let harmless = proto::AgentOptions {
            name: "n".into(),
            local: Some(proto::LocalAgentOptions {
                cwd: vec!["/w".into()],
                custom_tools: HashMap::from([("t".to_string(), proto::CustomToolDefinition::default())]),
                ..Default::default()
            }),
            cloud: Some(proto::CloudAgentOptions::default()),
            ..Default::default()
        };
        assert!(check_agent_options("1.0.26", &harmless).is_ok());
        assert!(check_agent_options("1.0.26", &proto::AgentOptions::default()).is_ok());
    }

    #[test]
    fn verbose_flag_from_1_0_27() {
        assert!(!accepts_verbose_flag(Some("1.0.26")));
        assert!(accepts_verbose_flag(Some("1.0.27")));
        assert!(accepts_verbose_flag(Some("1.1.0")));
        assert!(accepts_verbose_flag(None));
        assert!(accepts_verbose_flag(Some("dev")));
    }

    #[test]
    fn unknown_versions_allow_everything() {
        let all = every_field();
        for v in ["", "dev", "1.0", "latest"] {
            assert!(check_agent_options(v, &all).is_ok(), "{v:?}");
        }
    }
}
