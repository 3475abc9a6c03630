//! The layering of `src/storage`, checked by reading its source (see docs/ARCHITECTURE.md,
//! "Layering"). Storage's floors are folders ordered bottom to top:
//!
//! `spec` ← `io` ← `meta` ← `lsm` ← `read` ← `write` ← `commit` ← `maintenance`
//!
//! A module may name its own floor and the floors below it, never one above — counting `use`
//! lines and inline paths alike (`crate::storage::read::scan::Split`, `super::super::x::Y`,
//! `use crate::storage::{lsm::merge, read::scan}`). `storage/error.rs` is below every floor; the
//! files at storage's root (`mod.rs`, `warehouse.rs`, `metrics.rs`, `roles.rs`) are the facade
//! above them all, and floors do not reach back through it. Nothing in storage names
//! `datafusion`, `pgwire` or the layers above (`crate::query`, `crate::sql`, `crate::server`).
//! Test code (`#[cfg(test)]` modules and `*tests.rs` files) is exempt. The floors being in
//! one order, folders cannot form a cycle without a reference up a floor, which this catches.
//!
//! Above storage the rule is the facade: the floors other than `spec` are private modules, and
//! code outside `src/storage` (the layers above, `tests/`, `benches/`) names storage only
//! through `storage`'s root re-exports, its facade modules (`procedures`, `compaction`,
//! `metrics`, `roles`, `bench`) and `spec`, the shared vocabulary — never
//! `storage::<floor>::...` for a private floor, test code included. The compiler enforces this
//! for `src/`; the check states the rule, and covers the tests and benches with it too.
//!
//! `cargo test --test layering` runs the checks; a failure lists each offending reference with
//! its file and line.

use std::path::{Path, PathBuf};

const FLOORS: &[&str] = &[
    "spec",
    "io",
    "meta",
    "lsm",
    "read",
    "write",
    "commit",
    "maintenance",
];

/// The floors private to storage: every floor but `spec`, the vocabulary all layers share.
const PRIVATE_FLOORS: &[&str] = &[
    "io",
    "meta",
    "lsm",
    "read",
    "write",
    "commit",
    "maintenance",
];

/// Where a storage file sits: its floor (`None` at storage's root) and its module path under
/// storage (`["lsm", "merge_engine", "tests"]`).
#[derive(Debug, Clone)]
struct Place {
    floor: Option<usize>,
    module: Vec<String>,
}

fn place(relative: &Path) -> Place {
    let mut module: Vec<String> = relative
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if module.last().is_some_and(|m| m == "mod") {
        module.pop();
    }
    let floor = module
        .first()
        .and_then(|f| FLOORS.iter().position(|x| x == f))
        .filter(|_| relative.components().count() > 1);
    Place { floor, module }
}

/// The source without comments, string contents and (with `skip_tests`) test modules.
fn code(source: &str, skip_tests: bool) -> String {
    let mut out = String::with_capacity(source.len());
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(body) = rest.strip_prefix("r#\"") {
            // A raw string: up to its closing `"#`.
            i += body.find("\"#").map_or(rest.len(), |e| e + 5);
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            // '"' must not open a string; lifetimes ('a) are not char literals.
            i += len;
            out.push_str("' '");
        } else if rest.starts_with('"') {
            // Skip the string (paths in messages are not imports).
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            out.push_str("\"\"");
            i += j + 1;
        } else if skip_tests && rest.starts_with("#[cfg(test)]") {
            i += skip_item(rest);
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Length of the char literal at the start of `text` (`'x'`, `'"'`, `'\''`, `'\u{7f}'`), or
/// `None` (a lifetime, or not a quote).
fn char_literal(text: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let (_, c) = chars.next()?;
    if c == '\\' {
        return text[3..].find('\'').map(|e| e + 4);
    }
    let (i, close) = chars.next()?;
    (close == '\'').then_some(i + 1)
}

/// Length of a `#[cfg(test)]` attribute and the item it guards (a `mod x;`, or anything up to
/// its matching closing brace).
fn skip_item(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().skip("#[cfg(test)]".len()) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    text.len()
}

/// The storage modules a file's code names, as module paths under storage, with their lines.
fn references(place: &Place, code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = find_path_start(&code[at..]) {
        let start = at + found;
        let (path, len) = read_path(&code[start..]);
        at = start + len.max(1);
        let line = code[..start].matches('\n').count() + 1;
        if let Some(resolved) = resolve(place, &path) {
            out.extend(resolved.into_iter().map(|r| (line, r)));
        }
    }
    out
}

fn line_starts(code: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    std::iter::once(0)
        .chain(code.match_indices('\n').map(|(i, _)| i + 1))
        .enumerate()
        .map(|(n, i)| (n + 1, i))
}

/// The next place a path that can name storage starts (`crate::`, `super::`).
fn find_path_start(text: &str) -> Option<usize> {
    let mut best: Option<usize> = None;
    for needle in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(needle) {
            let i = from + i;
            let before = text[..i].chars().next_back();
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':')) {
                best = Some(best.map_or(i, |b| b.min(i)));
                break;
            }
            from = i + needle.len();
        }
    }
    best
}

/// A path starting at `text`: its segments (a `{...}` group expands into one path per item,
/// each its first segment only) and its length in bytes.
fn read_path(text: &str) -> (Vec<Vec<String>>, usize) {
    let mut segments: Vec<String> = Vec::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    loop {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            segments.push(text[start..i].to_owned());
        }
        if text[i..].starts_with("::{") {
            let open = i + 2;
            let close = matching_brace(text, open);
            let mut paths = Vec::new();
            for item in split_top_level(&text[open + 1..close]) {
                let first: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let mut second = None;
                if let Some(rest) = item.trim().strip_prefix(first.as_str())
                    && let Some(rest) = rest.strip_prefix("::")
                {
                    let s: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !s.is_empty() {
                        second = Some(s);
                    }
                }
                if !first.is_empty() {
                    let mut p = segments.clone();
                    p.push(first);
                    p.extend(second);
                    paths.push(p);
                }
            }
            return (paths, close + 1);
        }
        if text[i..].starts_with("::") {
            i += 2;
            continue;
        }
        return (vec![segments], i);
    }
}

fn matching_brace(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    text.len().saturating_sub(1)
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Paths as module paths under storage (`crate::storage::lsm::merge` → `["lsm", "merge"]`;
/// `super::` counted from the file's module); `crate::<layer>` paths as `["::<layer>"]`.
fn resolve(place: &Place, paths: &[Vec<String>]) -> Option<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for path in paths {
        let Some(first) = path.first() else { continue };
        let under_storage: Vec<String> = if first == "crate" {
            match path.get(1).map(String::as_str) {
                Some("storage") => path[2..].to_vec(),
                Some(layer) => {
                    out.push(vec![format!("::{layer}")]);
                    continue;
                }
                None => continue,
            }
        } else if first == "super" {
            let ups = path.iter().take_while(|s| *s == "super").count();
            if ups > place.module.len() {
                continue;
            }
            let mut base = place.module[..place.module.len() - ups].to_vec();
            base.extend(path[ups..].iter().cloned());
            base
        } else {
            continue;
        };
        out.push(under_storage);
    }
    Some(out)
}

/// References that still break the rule, each with the work that removes it. The check fails
/// on any reference not listed here and on any entry listed here that no longer occurs, so the
/// list only shrinks.
const KNOWN: &[(&str, &str)] = &[];

#[derive(Debug, Default)]
struct Report {
    violations: Vec<String>,
}

fn check_file(report: &mut Report, file: &str, place: &Place, source: &str) {
    let code = code(source, true);
    for forbidden in ["datafusion", "datafusion_pg_catalog", "pgwire", "arrow_pg"] {
        for (n, start) in line_starts(&code) {
            let line = &code[start..];
            let line = &line[..line.find('\n').unwrap_or(line.len())];
            if line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == forbidden)
            {
                report
                    .violations
                    .push(format!("{file}:{n}: storage names `{forbidden}`"));
            }
        }
    }
    for (n, target) in references(place, &code) {
        let Some(first) = target.first() else {
            continue;
        };
        if let Some(layer) = first.strip_prefix("::") {
            if matches!(layer, "query" | "sql" | "server") {
                report.violations.push(format!(
                    "{file}:{n}: storage names the layer above it (crate::{layer})"
                ));
            }
            continue;
        }
        let Some(own) = place.floor else { continue };
        let own_name = FLOORS[own];
        match FLOORS.iter().position(|f| f == first) {
            Some(theirs) => {
                if theirs > own {
                    report.violations.push(format!(
                        "{file}:{n}: floor `{own_name}` names `{}`, a floor above it",
                        target.join("::")
                    ));
                }
            }
            None if first == "error" || first == "StorageError" => {}
            None => report.violations.push(format!(
                "{file}:{n}: floor `{own_name}` names `{}` through storage's facade",
                target.join("::")
            )),
        }
    }
}

/// A file outside storage: every path through `storage` (`crate::storage::..`,
/// `tarn::storage::..`, `super::..::storage::..`, or `storage::..` after `use crate::storage;`
/// or inside `use crate::{..}`) that names a private floor. Test code is not exempt.
fn check_outside(report: &mut Report, file: &str, source: &str) {
    let code = code(source, false);
    let mut at = 0;
    while let Some(found) = code[at..].find("storage::") {
        let start = at + found;
        at = start + "storage::".len();
        let before = &code[..start];
        if before
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue; // `object_storage::`, `my_storage::`
        }
        if let Some(prefix) = before.strip_suffix("::") {
            let owner: String = prefix
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let owner_start = prefix.len() - owner.len();
            let nested = prefix[..owner_start].ends_with("::") && owner != "super";
            if nested || !matches!(owner.as_str(), "crate" | "tarn" | "super") {
                continue; // another crate's or module's `storage`
            }
        }
        let line = before.matches('\n').count() + 1;
        let (paths, _) = read_path(&code[start..]);
        for path in paths {
            let Some(floor) = path.get(1) else { continue };
            if PRIVATE_FLOORS.contains(&floor.as_str()) {
                report.violations.push(format!(
                    "{file}:{line}: names storage's private floor through `{}`: use what \
                     `storage` re-exports (its root, `procedures`, `compaction`, `bench`...)",
                    path.join("::")
                ));
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read storage folder") {
        let path = entry.expect("folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn storage_floors_point_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/storage");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "storage files found under {root:?}");
    let mut report = Report::default();
    for path in &files {
        let relative = path.strip_prefix(&root).expect("under storage");
        let name = relative.to_string_lossy();
        if name.ends_with("tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(path).expect("read source");
        check_file(
            &mut report,
            &format!("src/storage/{name}"),
            &place(relative),
            &source,
        );
    }
    let known = |v: &str| {
        KNOWN
            .iter()
            .any(|(file, what)| v.starts_with(&format!("{file}:")) && v.contains(what))
    };
    let new: Vec<&String> = report.violations.iter().filter(|v| !known(v)).collect();
    assert!(
        new.is_empty(),
        "storage's layering is broken (docs/ARCHITECTURE.md, \"Layering\"):\n{}",
        new.iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let gone: Vec<_> = KNOWN
        .iter()
        .filter(|(file, what)| {
            !report
                .violations
                .iter()
                .any(|v| v.starts_with(&format!("{file}:")) && v.contains(what))
        })
        .collect();
    assert!(
        gone.is_empty(),
        "fixed, so remove them from KNOWN: {gone:?}"
    );
}

#[test]
fn outside_storage_names_only_the_facade() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let storage = root.join("src/storage");
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.retain(|f| !f.starts_with(&storage));
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("src/query/table.rs")),
        "files outside storage found under {root:?}"
    );
    let mut report = Report::default();
    for path in &files {
        let name = path.strip_prefix(root).expect("under the package");
        let source = std::fs::read_to_string(path).expect("read source");
        check_outside(&mut report, &name.to_string_lossy(), &source);
    }
    assert!(
        report.violations.is_empty(),
        "code outside storage names a private floor (docs/ARCHITECTURE.md, \"Layering\"):\n{}",
        report.violations.join("\n")
    );
}

/// The checker itself: each kind of reference it must catch, and what it must let pass.
#[test]
fn the_check_catches_what_it_should() {
    let lsm = place(Path::new("lsm/merge.rs"));
    let check = |source: &str| {
        let mut report = Report::default();
        check_file(&mut report, "lsm/merge.rs", &lsm, source);
        report.violations
    };
    assert_eq!(check("use crate::storage::read::scan::Split;\n").len(), 1);
    assert_eq!(
        check("use crate::storage::{meta::table, write::x};\n").len(),
        1
    );
    assert_eq!(
        check("fn f() { crate::storage::commit::committer::f(); }\n").len(),
        1
    );
    assert_eq!(check("use super::super::maintenance::expire;\n").len(), 1);
    assert_eq!(check("use crate::storage::Table;\n").len(), 1, "the facade");
    assert_eq!(check("use crate::query::x;\n").len(), 1);
    assert_eq!(check("use datafusion::prelude::*;\n").len(), 1);
    // Allowed: own floor, floors below, the error type, comments, strings, test code.
    assert!(check("use crate::storage::lsm::memrun;\nuse super::data_file;\n").is_empty());
    assert!(check("use crate::storage::{StorageError, spec::types, io::lru};\n").is_empty());
    assert!(check("// crate::storage::write::x\nlet s = \"crate::query\";\n").is_empty());
    // A quote in a char literal opens no string: what follows is still checked.
    assert_eq!(
        check("let q = '\"'; crate::storage::read::scan::f();\n").len(),
        1
    );
    assert_eq!(
        check("fn f<'a>(x: &'a str) { crate::storage::read::scan::f(); }\n").len(),
        1
    );
    assert!(check("#[cfg(test)]\nmod tests {\n    use crate::storage::write::x;\n}\n").is_empty());

    // Outside storage: the facade and `spec` only, test code included.
    let outside = |source: &str| {
        let mut report = Report::default();
        check_outside(&mut report, "src/query/x.rs", source);
        report.violations
    };
    assert_eq!(
        outside("use crate::storage::write::table_write::TableWrite;\n").len(),
        1
    );
    assert_eq!(
        outside("use tarn::storage::{Table, maintenance::compactor};\n").len(),
        1
    );
    assert_eq!(
        outside("fn f() { tarn::storage::commit::commit_write(w); }\n").len(),
        1
    );
    assert_eq!(
        outside("use crate::storage;\nfn f() { storage::lsm::merge::f(); }\n").len(),
        1
    );
    assert_eq!(
        outside("use crate::{query, storage::read::scan::Split};\n").len(),
        1
    );
    assert_eq!(
        outside("use super::super::storage::meta::snapshot::Snapshot;\n").len(),
        1
    );
    assert_eq!(
        outside("#[cfg(test)]\nmod tests {\n    use crate::storage::io::file_io::FileIO;\n}\n")
            .len(),
        1,
        "test code is not exempt outside storage"
    );
    assert!(
        outside(
            "use crate::storage::{Table, TableWrite, spec::types::TypeKind};\n\
             use tarn::storage::compaction::{self, CompactOptions};\n\
             use crate::storage::procedures::{self as maintenance, ExpireConfig};\n\
             fn f() { crate::storage::commit_write(w); other::storage::read::x(); }\n\
             // crate::storage::write::x\nlet s = \"tarn::storage::lsm::y\";\n"
        )
        .is_empty()
    );
}
