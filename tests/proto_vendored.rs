//! proto/sdk/v1 is the pinned bridge's contract, byte for byte.

mod common;

#[test]
fn vendored_protos_match_the_pinned_bridge() {
    let bridge_protos = common::real_bridge()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("proto/sdk/v1");
    let ours = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/sdk/v1");
    let mut names: Vec<_> = std::fs::read_dir(&bridge_protos)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".proto"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 7, "{names:?}");
    for n in &names {
        let theirs = std::fs::read(bridge_protos.join(n)).unwrap();
        let mine = std::fs::read(ours.join(n)).unwrap_or_else(|_| panic!("proto/sdk/v1/{n} is missing"));
        assert!(theirs == mine, "proto/sdk/v1/{n} differs from the pinned bridge's copy");
    }
    let extra: Vec<_> = std::fs::read_dir(&ours)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !names.contains(n))
        .collect();
    assert!(extra.is_empty(), "files not in the pinned bridge: {extra:?}");
}
