//! Post-processes cbindgen's C header for importers (Swift, IDEs, clang's checks): every enum is
//! marked open, and every pointer in a declaration gets its nullability, by the rules below.
//! cbindgen cannot emit either, so this rewrites its text; anything the rewrite does not
//! recognise fails the build rather than leaving a declaration unannotated.

/// The annotation macros, defined right after the includes. Each is empty unless the compiler
/// is clang with the feature (gcc, MSVC and Zig's translate-c see plain C). The assume-nonnull
/// region also silences `-Wnullability-extension` (a -Wpedantic warning about `_Nullable` itself)
/// for the header's own declarations only.
pub const MACROS: &str = r#"
/*
 * Annotations for importers (Swift, IDEs, clang's checks); empty except under clang.
 * - CURSOR_OPEN_ENUM: the enums may gain values (Swift imports them as non-frozen enums).
 * - CURSOR_NULLABLE / CURSOR_NONNULL: a pointer may / may not be NULL. Between
 *   CURSOR_ASSUME_NONNULL_BEGIN and CURSOR_ASSUME_NONNULL_END, which wrap every declaration
 *   below, a pointer without either is non-NULL.
 */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(enum_extensibility)
#define CURSOR_OPEN_ENUM __attribute__((enum_extensibility(open)))
#endif
#endif
#ifndef CURSOR_OPEN_ENUM
#define CURSOR_OPEN_ENUM
#endif
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(nullability)
#define CURSOR_NULLABLE _Nullable
#define CURSOR_NONNULL _Nonnull
#define CURSOR_ASSUME_NONNULL_BEGIN \
    _Pragma("clang diagnostic push") \
    _Pragma("clang diagnostic ignored \"-Wnullability-extension\"") \
    _Pragma("clang assume_nonnull begin")
#define CURSOR_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end") _Pragma("clang diagnostic pop")
#endif
#endif
#ifndef CURSOR_NULLABLE
#define CURSOR_NULLABLE
#define CURSOR_NONNULL
#define CURSOR_ASSUME_NONNULL_BEGIN
#define CURSOR_ASSUME_NONNULL_END
#endif

CURSOR_ASSUME_NONNULL_BEGIN
"#;

const REGION_BEGIN: &str = "\nCURSOR_ASSUME_NONNULL_BEGIN\n";
const REGION_END: &str = "CURSOR_ASSUME_NONNULL_END\n\n";
const GUARD_END: &str = "#endif  /* CURSOR_SDK_H */";
const LINE_LENGTH: usize = 110;

// ---- The nullability rules (all of them). ----
//
// Every pointer is non-NULL (the assume-nonnull region) unless one of these makes it nullable.
// Levels: in `T **p`, the outer level is `p` itself and the inner level is `*p`.
//
// 1. By name (`by_name`), for any function or callback typedef:
//    - `err` (`cursor_error **`): both levels nullable (the preamble: "With a non-NULL
//      `cursor_error **err`"; `*err` is set to NULL on success).
//    - `out` and `*_out` of type `T **`: the inner level is nullable (out-parameters are set to
//      NULL first); the outer level follows the other rules (non-NULL unless documented).
//    - every pointer parameter of a `*_free` function ("Every *_free function accepts NULL").
//    - `user_data`, `user_data_free`: passed through untouched / documented "may be NULL".
//    - `options_json`, `*_options_json`: every options object is optional.
// 2. By doc phrase (`DOC_PARAM_PHRASES`, `DOC_RETURN_PHRASE`), from the declaration's doc comment:
//    a parameter `p` documented "`p` (may be NULL", "`p` may be NULL", "`p` must be NULL or",
//    "`p` NULL or", "`p` (NULL" is nullable; a `const char *` return documented " or NULL" is.
// 3. By list (`NULLABLE`): what the docs say in other words. A `T **` parameter other than `err`
//    and out-parameters has no rule for its inner level and fails the build.
//
// To extend: prefer the doc conventions (write "`x` may be NULL" in the Rust doc comment); else
// add `(declaration, parameter or "return")` to `NULLABLE` with the reason. The build fails when
// an entry names a declaration or parameter that does not exist, or is already covered by rules
// 1-2, so the list cannot rot.

const DOC_PARAM_PHRASES: &[&str] = &[
    "` (may be NULL",
    "` may be NULL",
    "` must be NULL or",
    "` NULL or",
    "` (NULL",
];
const DOC_RETURN_PHRASE: &str = " or NULL";

/// (declaration, parameter or "return"): nullable although neither a name nor a doc phrase says so.
const NULLABLE: &[(&str, &str)] = &[
    // "`fn` NULL removes it".
    ("cursor_set_log_callback", "fn"),
    // "with `event` NULL as the final call: `error` NULL when the stream ended normally".
    ("cursor_event_fn", "event"),
    ("cursor_event_fn", "error"),
    // "(NULL means `{"type":"object"}`)"; the description is optional too (read with opt_str).
    ("cursor_client_add_tool", "input_schema_json"),
    ("cursor_client_add_tool", "description"),
    // "JSON text, or NULL for a null result".
    ("cursor_store_reply_ok", "output_json"),
    // "Each out-pointer must be NULL or valid".
    ("cursor_error_rate_limit", "limit"),
    ("cursor_error_rate_limit", "remaining"),
    ("cursor_error_rate_limit", "reset_epoch_seconds"),
];

fn by_name(decl: &str, param: &str, levels: usize) -> [bool; 2] {
    let out_param = param == "out" || param.ends_with("_out");
    let outer = param == "err"
        || decl.ends_with("_free")
        || param == "user_data"
        || param == "user_data_free"
        || param == "options_json"
        || param.ends_with("_options_json");
    let inner = levels == 2 && (param == "err" || out_param);
    [outer, inner]
}

fn by_doc(doc: &str, param: &str) -> bool {
    DOC_PARAM_PHRASES.iter().any(|p| doc.contains(&format!("`{param}{p}")))
}

/// One function or callback typedef as cbindgen wrote it.
struct Decl {
    /// The text before the name: `cursor_status `, `const char *`, or `typedef void (*`.
    head: String,
    name: String,
    /// `)` for a callback typedef (closing `(*name`), else empty.
    after_name: &'static str,
    params: Vec<Param>,
    /// The doc comment's text on one line, `///` removed.
    doc: String,
}

struct Param {
    /// The type without its trailing `*`s (`const char`, `cursor_log_fn`).
    base: String,
    /// Pointer levels: the `*`s, or 1 for a callback typedef (a function pointer).
    levels: usize,
    stars: usize,
    name: String,
}

/// Marks every enum open, wraps the declarations in the assume-nonnull region and annotates
/// each nullable pointer (and both levels of every `T **`). Panics on anything unexpected.
pub fn annotate(header: &str) -> String {
    annotate_with(header, NULLABLE)
}

/// `annotate` with another `NULLABLE` list (tests use their own declarations).
pub fn annotate_with(header: &str, listed: &[(&str, &str)]) -> String {
    let enums = header.matches("typedef enum {").count();
    assert!(
        enums > 0 && enums == header.matches("typedef enum").count(),
        "header annotations: expected every enum as `typedef enum {{` ({enums} found); cbindgen's output changed"
    );
    let header = header.replace("typedef enum {", "typedef enum CURSOR_OPEN_ENUM {");
    assert_eq!(
        header.matches(REGION_BEGIN).count(),
        1,
        "header annotations: MACROS must be in after_includes"
    );
    assert_eq!(
        header.matches(GUARD_END).count(),
        1,
        "header annotations: no `{GUARD_END}` line"
    );
    let header = header.replace(GUARD_END, &format!("{REGION_END}{GUARD_END}"));

    let callbacks: Vec<String> = header
        .lines()
        .filter_map(|l| {
            Some(
                l.strip_prefix("typedef ")?
                    .split_once("(*")?
                    .1
                    .split_once(')')?
                    .0
                    .to_string(),
            )
        })
        .collect();
    let mut out = String::new();
    let mut decls = Vec::new();
    let mut doc = String::new();
    let mut lines = header.lines();
    while let Some(line) = lines.next() {
        if let Some(d) = line.strip_prefix("///") {
            doc.push_str(d);
            doc.push(' ');
        } else if is_declaration(line) {
            let mut text = line.to_string();
            while !text.trim_end().ends_with(';') {
                let next = lines
                    .next()
                    .unwrap_or_else(|| panic!("header annotations: unterminated `{text}`"));
                text.push(' ');
                text.push_str(next.trim());
            }
            // One line, single spaces, so a phrase wrapped across comment lines still matches.
            let doc_text = doc.split_whitespace().collect::<Vec<_>>().join(" ");
            doc.clear();
            let decl = parse(&text, &callbacks, doc_text);
            out.push_str(&emit(&decl, listed));
            decls.push(decl);
            continue;
        } else {
            doc.clear();
        }
        out.push_str(line);
        out.push('\n');
    }
    check_list(&decls, listed);
    out
}

/// A function declaration or callback typedef: a line that opens a parameter list at top level.
fn is_declaration(line: &str) -> bool {
    let top = !line.starts_with([' ', '#', '/', '}']) && !line.starts_with("extern");
    top && line.contains('(')
}

fn parse(text: &str, callbacks: &[String], doc: String) -> Decl {
    let bad = format!("header annotations: cannot parse `{text}`");
    let (head, name, after_name, rest) = if let Some((head, rest)) = text.split_once("(*") {
        let (name, rest) = rest.split_once(')').expect(&bad);
        (format!("{head}(*"), name.to_string(), ")", rest)
    } else {
        let (before, _) = text.split_once('(').expect(&bad);
        let split = before.rfind([' ', '*']).expect(&bad) + 1;
        (
            before[..split].to_string(),
            before[split..].to_string(),
            "",
            &text[before.len()..],
        )
    };
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(");"))
        .expect(&bad);
    assert!(!inner.contains(['(', ')']), "{bad}");
    let params = if inner.trim() == "void" {
        Vec::new()
    } else {
        inner
            .split(',')
            .map(|p| {
                let p = p.trim();
                let split = p.rfind([' ', '*']).expect(&bad) + 1;
                let ty = p[..split].trim_end();
                let base = ty.trim_end_matches([' ', '*']).to_string();
                let stars = ty.matches('*').count();
                let callback = callbacks.contains(&base);
                Param {
                    levels: stars + usize::from(callback),
                    stars,
                    base,
                    name: p[split..].to_string(),
                }
            })
            .collect()
    };
    Decl {
        head,
        name,
        after_name,
        params,
        doc,
    }
}

fn qualifier(nullable: bool) -> &'static str {
    if nullable {
        "CURSOR_NULLABLE"
    } else {
        "CURSOR_NONNULL"
    }
}

fn emit(d: &Decl, listed: &[(&str, &str)]) -> String {
    let mut head = d.head.clone();
    let returns_pointer = d.after_name.is_empty() && head.ends_with('*');
    assert!(
        !head.ends_with("**"),
        "header annotations: no rule for the `**` return of {}",
        d.name
    );
    if returns_pointer && (listed.contains(&(d.name.as_str(), "return")) || d.doc.contains(DOC_RETURN_PHRASE)) {
        head.push_str("CURSOR_NULLABLE ");
    }
    let params: Vec<String> = d.params.iter().map(|p| annotate_param(d, p, listed)).collect();
    let open = format!("{head}{}{}(", d.name, d.after_name);
    let one_line = format!("{open}{});", params.join(", "));
    if params.is_empty() {
        return format!("{open}void);\n");
    }
    if one_line.len() <= LINE_LENGTH {
        return one_line + "\n";
    }
    let indent = format!(",\n{}", " ".repeat(open.len()));
    format!("{open}{});\n", params.join(&indent))
}

fn annotate_param(d: &Decl, p: &Param, listed: &[(&str, &str)]) -> String {
    let [named_outer, named_inner] = by_name(&d.name, &p.name, p.levels);
    let outer = named_outer || by_doc(&d.doc, &p.name) || listed.contains(&(d.name.as_str(), p.name.as_str()));
    let stars = "*".repeat(p.stars);
    match p.levels {
        0 => format!("{} {}", p.base, p.name),
        1 if !outer => format!("{} {stars}{}", p.base, p.name),
        1 if p.stars == 0 => format!("{} CURSOR_NULLABLE {}", p.base, p.name),
        1 => format!("{} *CURSOR_NULLABLE {}", p.base, p.name),
        2 if p.stars == 2 => {
            assert!(
                named_inner,
                "header annotations: no rule for `*{}` in {} (only err and out-parameters are `T **`)",
                p.name, d.name
            );
            format!("{} *CURSOR_NULLABLE *{} {}", p.base, qualifier(outer), p.name)
        }
        _ => panic!(
            "header annotations: no rule for the pointer levels of {}.{}",
            d.name, p.name
        ),
    }
}

/// Every `NULLABLE` entry names an existing declaration and parameter (or a pointer return),
/// and no naming or doc rule covers it already.
fn check_list(decls: &[Decl], listed: &[(&str, &str)]) {
    for &(name, what) in listed {
        let d = decls.iter().find(|d| d.name == name).unwrap_or_else(|| {
            panic!("header annotations: NULLABLE names `{name}`, which the header does not declare")
        });
        let covered = if what == "return" {
            assert!(
                d.head.ends_with('*'),
                "header annotations: NULLABLE names the return of `{name}`, not a pointer"
            );
            d.doc.contains(DOC_RETURN_PHRASE)
        } else {
            assert!(
                d.params.iter().any(|p| p.name == what && p.levels > 0),
                "header annotations: NULLABLE names `{name}.{what}`, which is not a pointer parameter"
            );
            by_name(name, what, 1)[0] || by_doc(&d.doc, what)
        };
        assert!(
            !covered,
            "header annotations: NULLABLE entry `{name}.{what}` is covered by a rule already: remove it"
        );
    }
}
