//! The committed C header is the generated one, its version macros match Cargo.toml, and its
//! importer annotations (build/header_annotations.rs) are complete: open enums, a nullability
//! region around every declaration, guard macros defined (clang-only) before use, and every
//! argument the library reads as optional marked CURSOR_NULLABLE.

use std::ffi::CStr;

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cursor_sdk.h"));
const COMMITTED: &str = include_str!("../include/cursor_sdk.h");

#[test]
fn committed_header_is_current() {
    assert!(
        GENERATED == COMMITTED,
        "include/cursor_sdk.h is stale: run `make header` and commit it"
    );
}

#[test]
fn version_macros_match_the_package_and_the_library() {
    let version = env!("CARGO_PKG_VERSION");
    let define = |name: &str| -> String {
        COMMITTED
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("{name} missing"))
            .trim()
            .to_string()
    };
    assert_eq!(define("CURSOR_SDK_VERSION"), format!("\"{version}\""));
    let parts: Vec<&str> = version.split('.').collect();
    assert_eq!(define("CURSOR_SDK_VERSION_MAJOR"), parts[0]);
    assert_eq!(define("CURSOR_SDK_VERSION_MINOR"), parts[1]);
    assert_eq!(define("CURSOR_SDK_VERSION_PATCH"), parts[2]);
    let runtime = unsafe { CStr::from_ptr(cursor_sdk::ffi::cursor_sdk_version()) };
    assert_eq!(runtime.to_str().unwrap(), version);
}

/// Lines that start a function declaration or a callback typedef.
fn declaration_lines() -> Vec<(usize, &'static str)> {
    COMMITTED
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            !l.starts_with([' ', '#', '/', '}']) && !l.starts_with("extern") && l.contains("cursor_") && l.contains('(')
        })
        .collect()
}

#[test]
fn every_exported_function_is_documented_with_triple_slash() {
    // cbindgen copies doc comments; a declaration without one above it is undocumented.
    let lines: Vec<&str> = COMMITTED.lines().collect();
    let decls = declaration_lines();
    assert!(decls.len() > 50, "only {} declarations found", decls.len());
    for (i, l) in decls {
        assert!(i > 0 && lines[i - 1].starts_with("///"), "undocumented: {l}");
    }
    // `///` (not `//`) so IDEs show the docs; `//` is left only after code (`}  // extern "C"`).
    let plain = COMMITTED
        .lines()
        .find(|l| l.trim_start().starts_with("//") && !l.trim_start().starts_with("///"));
    assert_eq!(plain, None, "a `//` comment line instead of `///`");
}

#[test]
fn every_enum_is_open() {
    let enums: Vec<&str> = COMMITTED.lines().filter(|l| l.contains("typedef enum")).collect();
    assert!(enums.len() >= 4, "expected the 4 enums, found {enums:?}");
    for l in enums {
        assert_eq!(l, "typedef enum CURSOR_OPEN_ENUM {", "an enum without CURSOR_OPEN_ENUM");
    }
}

/// The index of the only line equal to `text`.
fn only_line(text: &str) -> usize {
    let at: Vec<usize> = COMMITTED
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == text)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "`{text}` must be on exactly one line, found at {at:?}");
    at[0]
}

#[test]
fn the_nullability_region_wraps_every_declaration() {
    let (begin, end) = (
        only_line("CURSOR_ASSUME_NONNULL_BEGIN"),
        only_line("CURSOR_ASSUME_NONNULL_END"),
    );
    let lines: Vec<&str> = COMMITTED.lines().collect();
    let first_type = lines.iter().position(|l| l.starts_with("typedef")).expect("no typedef");
    assert!(begin < first_type, "the region must open before the first typedef");
    for (i, l) in declaration_lines() {
        assert!(begin < i && i < end, "outside the nullability region: {l}");
    }
    // Clang infers nothing for the inner level of `T **`: both levels must be spelled out.
    for (i, l) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with(['/', '*']))
    {
        assert!(!l.contains("**"), "line {}: a `**` without nullability: {l}", i + 1);
    }
}

#[test]
fn the_guard_macros_are_defined_clang_only_before_use() {
    let lines: Vec<&str> = COMMITTED.lines().collect();
    let is_code = |l: &&str| !l.starts_with('#') && !l.trim_start().starts_with(['/', '*']);
    for name in [
        "CURSOR_OPEN_ENUM",
        "CURSOR_NULLABLE",
        "CURSOR_NONNULL",
        "CURSOR_ASSUME_NONNULL_BEGIN",
        "CURSOR_ASSUME_NONNULL_END",
    ] {
        let define = format!("#define {name}");
        let defines: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i] == define || lines[i].starts_with(&format!("{define} ")))
            .collect();
        // One clang definition and one empty fallback for every other compiler.
        assert_eq!(
            defines.len(),
            2,
            "{name}: expected 2 definitions, found lines {defines:?}"
        );
        assert!(defines.iter().any(|&i| lines[i] == define), "{name}: no empty fallback");
        let clang = *defines
            .iter()
            .find(|&&i| lines[i] != define)
            .expect("a clang definition");
        let ifs: Vec<&str> = lines[..clang]
            .iter()
            .rev()
            .filter(|l| l.starts_with("#if"))
            .take(2)
            .copied()
            .collect();
        assert!(
            ifs.len() == 2 && ifs[0].starts_with("#if __has_") && ifs[1].starts_with("#if defined(__clang__) && defined(__has_"),
            "{name}: the clang definition is not behind `#if defined(__clang__) && defined(__has_…)` then `#if __has_…(…)`: {ifs:?}"
        );
        let first_use = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| is_code(l))
            .find(|(_, l)| l.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name))
            .map(|(i, _)| i);
        if let Some(u) = first_use {
            assert!(
                defines.iter().all(|&d| d < u),
                "{name} is used on line {} before it is defined",
                u + 1
            );
        }
    }
}

/// The declaration of `name` on one line: `cursor_status cursor_x(const char *CURSOR_NULLABLE a, …);`.
fn declaration(name: &str) -> String {
    let lines: Vec<&str> = COMMITTED.lines().collect();
    let start = lines
        .iter()
        .position(|l| {
            !l.starts_with(' ')
                && !l.starts_with("///")
                && [format!(" {name}("), format!("*{name}(")].iter().any(|n| l.contains(n))
                || l.contains(&format!("(*{name})("))
        })
        .unwrap_or_else(|| panic!("{name} is not declared"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| l.ends_with(';'))
            .expect("unterminated");
    lines[start..=end]
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn arguments_the_library_reads_as_optional_are_nullable() {
    // The library reads optional strings with opt_str/opt_json: NULL must be allowed there.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/ffi");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("src/ffi") {
        let path = entry.expect("dir entry").path();
        let source = std::fs::read_to_string(&path).expect("read source");
        let mut function: Option<&str> = None;
        for line in source.lines() {
            // A new item starts at `[pub] [unsafe] [extern "C"] fn name(`; only exported ones count.
            if let Some((before, after)) = line.split_once("fn ") {
                let keywords = ["pub", "pub(crate)", "unsafe", "extern", "\"C\"", "const"];
                if before.split_whitespace().all(|w| keywords.contains(&w)) && !after.starts_with('(') {
                    function = before
                        .contains("extern")
                        .then(|| after.split(['(', '<']).next().unwrap_or(""));
                }
            }
            for call in ["opt_str(", "opt_json("] {
                for (at, _) in line.match_indices(call) {
                    let arg = line[at + call.len()..].split(',').next().unwrap_or("").trim();
                    let Some(f) = function.filter(|f| f.starts_with("cursor_")) else {
                        continue;
                    };
                    let decl = declaration(f);
                    assert!(
                        decl.contains(&format!("*CURSOR_NULLABLE {arg},"))
                            || decl.contains(&format!("*CURSOR_NULLABLE {arg})")),
                        "{}: {f} reads `{arg}` with {call}…) but the header does not mark it CURSOR_NULLABLE: {decl}",
                        path.display()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 15, "only {checked} optional arguments found in src/ffi");
}

#[test]
fn documented_nullability_examples() {
    // A few results of the rules in build/header_annotations.rs, spelled out.
    let has = |name: &str, text: &str| {
        let d = declaration(name);
        assert!(d.contains(text), "{name}: expected `{text}` in {d}");
    };
    has(
        "cursor_client_new",
        "cursor_client *CURSOR_NULLABLE *CURSOR_NONNULL out,",
    );
    has(
        "cursor_client_new",
        "cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err)",
    );
    has("cursor_client_free", "(cursor_client *CURSOR_NULLABLE c)");
    has(
        "cursor_run_wait",
        "char *CURSOR_NULLABLE *CURSOR_NULLABLE result_json_out,",
    );
    has("cursor_set_log_callback", "cursor_log_fn CURSOR_NULLABLE fn,");
    has("cursor_run_set_callback", "cursor_event_fn fn,");
    has(
        "cursor_event_text",
        "const char *CURSOR_NULLABLE cursor_event_text(const cursor_event *e)",
    );
    has(
        "cursor_error_message",
        "const char *cursor_error_message(const cursor_error *e)",
    );
    has("cursor_event_fn", "const cursor_event *CURSOR_NULLABLE event,");
    has("cursor_store_fn", "const char *input_json,");
}

// The post-processor itself, on made-up declarations: new functions that follow the conventions
// are annotated without touching its rule list, and what it cannot handle fails loudly.
#[path = "../build/header_annotations.rs"]
mod header_annotations;

/// A cbindgen-like header around `body` (the macros come from `after_includes`).
fn made_up(body: &str) -> String {
    format!(
        "#ifndef CURSOR_SDK_H\n#define CURSOR_SDK_H\n{}\ntypedef enum {{\n    A = 1,\n}} e;\n\n{body}\n#endif  /* CURSOR_SDK_H */\n",
        header_annotations::MACROS
    )
}

/// The panic message of `f`.
fn panic_of(f: impl FnOnce() -> String + std::panic::UnwindSafe) -> String {
    let e = std::panic::catch_unwind(f).expect_err("expected a panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_new_function_following_the_conventions_is_annotated() {
    let body = "/// A label, or NULL. `hint` may be NULL.\n\
                const char *cursor_w_label(const cursor_w *w, const char *hint, const char *options_json, char **text_out, cursor_error **err);\n\
                /// Frees a w.\n\
                void cursor_w_free(cursor_w *w);\n\
                /// A callback.\n\
                typedef void (*cursor_w_fn)(void *user_data, const char *what);\n\
                /// Sets it (`fn` required).\n\
                void cursor_w_set(cursor_w *w, cursor_w_fn fn, cursor_w_fn other);\n";
    let out = header_annotations::annotate_with(&made_up(body), &[("cursor_w_set", "other")]);
    for want in [
        "typedef enum CURSOR_OPEN_ENUM {",
        "const char *CURSOR_NULLABLE cursor_w_label(const cursor_w *w,\n",
        "const char *CURSOR_NULLABLE hint,",
        "const char *CURSOR_NULLABLE options_json,",
        "char *CURSOR_NULLABLE *CURSOR_NONNULL text_out,",
        "cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);",
        "void cursor_w_free(cursor_w *CURSOR_NULLABLE w);",
        "typedef void (*cursor_w_fn)(void *CURSOR_NULLABLE user_data, const char *what);",
        "void cursor_w_set(cursor_w *w, cursor_w_fn fn, cursor_w_fn CURSOR_NULLABLE other);",
        "CURSOR_ASSUME_NONNULL_END\n\n#endif  /* CURSOR_SDK_H */",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

#[test]
fn what_the_rules_do_not_cover_fails_the_build() {
    let annotate = |body: &'static str, list: &'static [(&'static str, &'static str)]| {
        panic_of(move || header_annotations::annotate_with(&made_up(body), list))
    };
    let two_levels = annotate("/// Takes a list.\nvoid cursor_w_take(const char **names);\n", &[]);
    assert!(
        two_levels.contains("no rule for `*names` in cursor_w_take"),
        "{two_levels}"
    );
    let missing = annotate(
        "/// Frees.\nvoid cursor_w_free(cursor_w *w);\n",
        &[("cursor_w_gone", "x")],
    );
    assert!(
        missing.contains("`cursor_w_gone`, which the header does not declare"),
        "{missing}"
    );
    let no_param = annotate("/// Sets.\nvoid cursor_w_set(cursor_w *w);\n", &[("cursor_w_set", "v")]);
    assert!(
        no_param.contains("`cursor_w_set.v`, which is not a pointer parameter"),
        "{no_param}"
    );
    let redundant = annotate(
        "/// `v` may be NULL.\nvoid cursor_w_set(const char *v);\n",
        &[("cursor_w_set", "v")],
    );
    assert!(
        redundant.contains("`cursor_w_set.v` is covered by a rule already"),
        "{redundant}"
    );
    // The real list names declarations of the real header only.
    let real = panic_of(|| header_annotations::annotate(&made_up("/// Frees.\nvoid cursor_w_free(cursor_w *w);\n")));
    assert!(real.contains("which the header does not declare"), "{real}");
    let named_enum =
        panic_of(|| header_annotations::annotate(&made_up("").replace("typedef enum {", "typedef enum e {")));
    assert!(
        named_enum.contains("expected every enum as `typedef enum {`"),
        "{named_enum}"
    );
}
