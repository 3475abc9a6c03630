//! PostgreSQL's pattern matching where DataFusion's differs or is missing:
//! `substring(s from 'regex')` and `substring(s from 'similar' for 'escape')` (and the
//! positional `substring`/`substr` with PostgreSQL's 22011 for a negative length),
//! `similar_to_escape` (PostgreSQL's translation of a SIMILAR TO pattern into an anchored
//! regular expression; `sql::patterns` rewrites `SIMILAR TO` into `~ similar_to_escape(..)`),
//! `regexp_substr`, `regexp_split_to_array`, `regexp_match` refusing the `g` flag (22023), and
//! 2201B for a regular expression that does not compile.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{Signature, Volatility};
use datafusion::prelude::SessionContext;
use regex::{Regex, RegexBuilder};

use super::{data_error, session_fn};

/// Registers the pattern functions of this family.
pub fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(substring_udf());
    ctx.register_udf(session_fn("substr", any(), DataType::Utf8, substring));
    ctx.register_udf(session_fn(
        "similar_to_escape",
        any(),
        DataType::Utf8,
        |args| {
            let Some(pattern) = text_arg(args, 0) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let escape = match args.get(1) {
                None => Some('\\'),
                Some(_) => match text_arg(args, 1) {
                    None => return Ok(ScalarValue::Utf8(None)),
                    Some(e) => escape_char(&e)?,
                },
            };
            Ok(ScalarValue::Utf8(Some(similar_to_regex(&pattern, escape)?)))
        },
    ));
    ctx.register_udf(session_fn("like_escape", any(), DataType::Utf8, |args| {
        let (Some(pattern), Some(escape)) = (text_arg(args, 0), text_arg(args, 1)) else {
            return Ok(ScalarValue::Utf8(None));
        };
        Ok(ScalarValue::Utf8(Some(like_escape(
            &pattern,
            escape_char(&escape)?,
        ))))
    }));
    ctx.register_udf(session_fn(
        "regexp_substr",
        any(),
        DataType::Utf8,
        regexp_substr,
    ));
    let list = DataType::List(std::sync::Arc::new(Field::new_list_field(
        DataType::Utf8,
        true,
    )));
    ctx.register_udf(session_fn(
        "regexp_split_to_array",
        any(),
        list.clone(),
        |args| {
            let (Some(s), Some(p)) = (text_arg(args, 0), text_arg(args, 1)) else {
                return Ok(null_list());
            };
            let flags = flags_arg(args, 2, "regexp_split_to_array")?;
            let re = compile(&p, &flags)?;
            let parts: Vec<ScalarValue> = split(&re, &s)
                .into_iter()
                .map(|p| ScalarValue::Utf8(Some(p.to_owned())))
                .collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &parts,
                &DataType::Utf8,
            )))
        },
    ));
    let list_of_lists = DataType::List(std::sync::Arc::new(Field::new_list_field(
        list.clone(),
        true,
    )));
    ctx.register_udf(session_fn(
        "pg_regexp_matches",
        any(),
        list_of_lists,
        |args| {
            let flags = text_arg(args, 2).unwrap_or_default();
            let (Some(s), Some(p)) = (text_arg(args, 0), text_arg(args, 1)) else {
                return Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    &[],
                    &null_list().data_type(),
                )));
            };
            let re = compile(&p, &flags.replace('g', ""))?;
            let mut rows = Vec::new();
            for caps in re.captures_iter(&s) {
                let values: Vec<ScalarValue> = if caps.len() == 1 {
                    vec![ScalarValue::Utf8(Some(caps[0].to_owned()))]
                } else {
                    (1..caps.len())
                        .map(|i| ScalarValue::Utf8(caps.get(i).map(|m| m.as_str().to_owned())))
                        .collect()
                };
                rows.push(ScalarValue::List(ScalarValue::new_list_nullable(
                    &values,
                    &DataType::Utf8,
                )));
                if !flags.contains('g') {
                    break;
                }
            }
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &rows,
                &null_list().data_type(),
            )))
        },
    ));
    ctx.register_udf(session_fn("regexp_match", any(), list, |args| {
        let (Some(s), Some(p)) = (text_arg(args, 0), text_arg(args, 1)) else {
            return Ok(null_list());
        };
        let flags = flags_arg(args, 2, "regexp_match")?;
        let re = compile(&p, &flags)?;
        let Some(caps) = re.captures(&s) else {
            return Ok(null_list());
        };
        let values: Vec<ScalarValue> = if caps.len() == 1 {
            vec![ScalarValue::Utf8(Some(caps[0].to_owned()))]
        } else {
            (1..caps.len())
                .map(|i| ScalarValue::Utf8(caps.get(i).map(|m| m.as_str().to_owned())))
                .collect()
        };
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(
            &values,
            &DataType::Utf8,
        )))
    }));
}

fn null_list() -> ScalarValue {
    ScalarValue::try_from(DataType::List(std::sync::Arc::new(Field::new_list_field(
        DataType::Utf8,
        true,
    ))))
    .unwrap_or(ScalarValue::Null)
}

/// PostgreSQL's `substring` (see [`substring`]).
pub fn substring_udf() -> datafusion::logical_expr::ScalarUDF {
    session_fn(
        "substring",
        Signature::variadic_any(Volatility::Immutable),
        DataType::Utf8,
        substring,
    )
}

/// Argument `i` as text (`None` for NULL or a missing argument).
pub(super) fn text_arg(args: &[ScalarValue], i: usize) -> Option<String> {
    let v = args.get(i)?;
    if v.is_null() {
        return None;
    }
    match v.try_as_str() {
        Some(s) => s.map(str::to_owned),
        None => Some(v.to_string()),
    }
}

/// Argument `i` as a 64-bit integer (`None` for NULL or a missing argument).
pub(super) fn int_arg(args: &[ScalarValue], i: usize) -> Result<Option<i64>> {
    match args.get(i) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => match v.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(n) => Ok(n),
            _ => Ok(None),
        },
    }
}

fn is_text(v: &ScalarValue) -> bool {
    matches!(
        v.data_type(),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}

fn flags_arg(args: &[ScalarValue], i: usize, function: &str) -> Result<String> {
    let flags = text_arg(args, i).unwrap_or_default();
    if flags.contains('g') {
        return Err(data_error(
            "22023",
            format!("{function}() does not support the \"global\" option"),
        ));
    }
    Ok(flags)
}

thread_local! {
    static CACHE: std::cell::RefCell<HashMap<(String, String), Regex>> =
        std::cell::RefCell::new(HashMap::new());
}

/// Compiles a PostgreSQL regular expression with PostgreSQL's flags (`i`, `c`, `n`, `m`,
/// `s`, `x`): 22023 for an unknown flag, 2201B for a pattern that does not compile.
pub fn compile(pattern: &str, flags: &str) -> Result<Regex> {
    let key = (pattern.to_owned(), flags.to_owned());
    if let Some(re) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(re);
    }
    let mut builder = RegexBuilder::new(pattern);
    // PostgreSQL's default is non-newline-sensitive: `.` matches a newline.
    builder.dot_matches_new_line(true);
    for f in flags.chars() {
        match f {
            'i' => builder.case_insensitive(true),
            'c' => builder.case_insensitive(false),
            'n' | 'm' => builder.dot_matches_new_line(false).multi_line(true),
            's' => builder.dot_matches_new_line(true).multi_line(false),
            'x' => builder.ignore_whitespace(true),
            'g' => &mut builder,
            other => {
                return Err(data_error(
                    "22023",
                    format!("invalid regular expression option: \"{other}\""),
                ));
            }
        };
    }
    let re = builder.build().map_err(|e| {
        let detail = match e {
            regex::Error::Syntax(s) => s.lines().last().unwrap_or_default().to_owned(),
            other => other.to_string(),
        };
        data_error("2201B", format!("invalid regular expression: {detail}"))
    })?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 256 {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    Ok(re)
}

/// PostgreSQL's `regexp_split_to_*`: the pieces between matches; an empty match at the start,
/// at the end, or right after the previous match splits nothing.
pub fn split<'a>(re: &Regex, s: &'a str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut piece_start = 0;
    for m in re.find_iter(s) {
        if m.start() == m.end()
            && (m.start() == 0 || m.start() == s.len() || m.start() == piece_start)
        {
            continue;
        }
        out.push(&s[piece_start..m.start()]);
        piece_start = m.end();
    }
    out.push(&s[piece_start..]);
    out
}

/// PostgreSQL's `like_escape`: a LIKE pattern with escape `escape` (none when `None`) as the
/// same pattern with backslash escapes.
pub fn like_escape(pattern: &str, escape: Option<char>) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut after_escape = false;
    for c in pattern.chars() {
        if after_escape {
            if c == '\\' {
                out.push('\\');
            } else if c != '%' && c != '_' {
                // An escaped ordinary character is itself.
                out.push(c);
                after_escape = false;
                continue;
            } else {
                out.push('\\');
            }
            out.push(c);
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    out
}

fn escape_char(e: &str) -> Result<Option<char>> {
    let mut chars = e.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(data_error(
            "22025",
            "invalid escape string\nHINT:  Escape string must be empty or one character.",
        )),
    }
}

/// PostgreSQL's `similar_to_escape`: a SIMILAR TO pattern as an anchored POSIX regular
/// expression. `%` is `.*`, `_` is `.`, parentheses do not capture, and the first and second
/// escape-double-quote mark the part `substring(... similar ...)` returns.
pub fn similar_to_regex(pattern: &str, escape: Option<char>) -> Result<String> {
    let mut out = String::from("^(?:");
    let mut after_escape = false;
    let mut in_class = false;
    let mut separators = 0;
    for c in pattern.chars() {
        if after_escape {
            after_escape = false;
            if c == '"' && !in_class {
                out.push_str(match separators {
                    0 => "){1,1}?(",
                    1 => "){1,1}(?:",
                    _ => {
                        return Err(data_error(
                            "2201B",
                            "SQL regular expression may not contain more than two escape-double-quote separators",
                        ));
                    }
                });
                separators += 1;
            } else {
                out.push_str(&regex::escape(&c.to_string()));
            }
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
            if c == ']' {
                in_class = false;
            }
        } else {
            match c {
                '[' => {
                    out.push(c);
                    in_class = true;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

/// `substring(s, from [, for])`: positions (integers) as PostgreSQL's `substr`, a regular
/// expression (text `from`), or a SIMILAR TO pattern with its escape (text `from` and `for`).
fn substring(args: &[ScalarValue]) -> Result<ScalarValue> {
    let null = ScalarValue::Utf8(None);
    if args.len() < 2 || args.len() > 3 {
        return Err(data_error(
            "42883",
            "function substring/substr takes two or three arguments",
        ));
    }
    if args.iter().any(ScalarValue::is_null) {
        return Ok(null);
    }
    let Some(s) = text_arg(args, 0) else {
        return Ok(null);
    };
    if is_text(&args[1]) {
        let pattern = text_arg(args, 1).unwrap_or_default();
        let re = if args.len() == 3 {
            let escape = escape_char(&text_arg(args, 2).unwrap_or_default())?;
            compile(&similar_to_regex(&pattern, escape)?, "")?
        } else {
            compile(&pattern, "")?
        };
        let Some(caps) = re.captures(&s) else {
            return Ok(null);
        };
        // The first parenthesised subexpression when there is one, else the whole match.
        let m = if caps.len() > 1 {
            caps.get(1)
        } else {
            caps.get(0)
        };
        return Ok(ScalarValue::Utf8(m.map(|m| m.as_str().to_owned())));
    }
    let start = int_arg(args, 1)?.unwrap_or(1);
    let length = int_arg(args, 2)?;
    Ok(ScalarValue::Utf8(Some(substr(&s, start, length)?)))
}

/// PostgreSQL's `substr(s, start [, length])` in characters; 22011 for a negative length.
pub fn substr(s: &str, start: i64, length: Option<i64>) -> Result<String> {
    let end = match length {
        Some(l) if l < 0 => {
            return Err(data_error("22011", "negative substring length not allowed"));
        }
        Some(l) => Some(start.saturating_add(l)),
        None => None,
    };
    let from = start.max(1);
    Ok(s.chars()
        .enumerate()
        .map(|(i, c)| (i as i64 + 1, c))
        .filter(|(pos, _)| *pos >= from && end.is_none_or(|e| *pos < e))
        .map(|(_, c)| c)
        .collect())
}

/// `regexp_substr(s, pattern [, start [, n [, flags [, subexpr]]]])`.
fn regexp_substr(args: &[ScalarValue]) -> Result<ScalarValue> {
    let null = ScalarValue::Utf8(None);
    if args.iter().any(ScalarValue::is_null) {
        return Ok(null);
    }
    let (Some(s), Some(p)) = (text_arg(args, 0), text_arg(args, 1)) else {
        return Ok(null);
    };
    let start = int_arg(args, 2)?.unwrap_or(1);
    let n = int_arg(args, 3)?.unwrap_or(1);
    if start < 1 {
        return Err(data_error(
            "22023",
            format!("invalid value for parameter \"start\": {start}"),
        ));
    }
    if n < 1 {
        return Err(data_error(
            "22023",
            format!("invalid value for parameter \"n\": {n}"),
        ));
    }
    let flags = flags_arg(args, 4, "regexp_substr")?;
    let subexpr = int_arg(args, 5)?.unwrap_or(0);
    let re = compile(&p, &flags)?;
    let offset = s
        .char_indices()
        .nth((start - 1) as usize)
        .map_or(s.len(), |(i, _)| i);
    let found = re.captures_iter(&s[offset..]).nth((n - 1) as usize);
    Ok(ScalarValue::Utf8(found.and_then(|caps| {
        usize::try_from(subexpr)
            .ok()
            .and_then(|i| caps.get(i))
            .map(|m| m.as_str().to_owned())
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(s: &str, pattern: &str) -> bool {
        compile(&similar_to_regex(pattern, Some('\\')).unwrap(), "")
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn similar_to_is_anchored() {
        assert!(matches("abc", "abc"));
        assert!(!matches("abc", "a"));
        assert!(matches("abc", "%(b|d)%"));
        assert!(!matches("abc", "(b|c)%"));
        assert!(matches("a.c", "a.c"));
        assert!(!matches("abc", "a.c"));
    }

    #[test]
    fn substrings_like_postgres() {
        let s = |v: &str| ScalarValue::Utf8(Some(v.to_owned()));
        let sub = |args: &[ScalarValue]| substring(args).unwrap();
        assert_eq!(sub(&[s("foobar"), s("o.b")]), s("oob"));
        assert_eq!(sub(&[s("foobar"), s("o(.)b")]), s("o"));
        assert_eq!(sub(&[s("Thomas"), s("%#\"o_a#\"_"), s("#")]), s("oma"));
        assert_eq!(substr("abc", 0, Some(2)).unwrap(), "a");
        assert_eq!(substr("abcdef", 2, None).unwrap(), "bcdef");
        assert!(substr("abc", 1, Some(-1)).is_err());
    }

    #[test]
    fn converts_like_escapes() {
        assert_eq!(like_escape("ab!%c", Some('!')), "ab\\%c");
        assert_eq!(like_escape("a\\b", Some('!')), "a\\\\b");
        assert_eq!(like_escape("a!!b", Some('!')), "a!b");
    }

    #[test]
    fn splits_like_postgres() {
        let re = compile("\\d+", "").unwrap();
        assert_eq!(split(&re, "a1b22c333"), vec!["a", "b", "c", ""]);
        let re = compile("", "").unwrap();
        assert_eq!(split(&re, "abc"), vec!["a", "b", "c"]);
    }
}
