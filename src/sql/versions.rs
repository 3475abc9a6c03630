//! Time-travel syntax on table references: `t FOR SYSTEM_TIME AS OF <timestamp expression>`
//! (SQL:2011) and `t VERSION AS OF <snapshot id | 'tag'>`.
//!
//! sqlparser parses both when the dialect enables table versioning, but its `VERSION AS OF`
//! takes only a number (or a `$n` parameter). A tag name is a string literal, so before
//! parsing, the literal right after `VERSION AS OF` becomes a placeholder token that carries
//! the tag name hex-encoded (`$tarn_tag_<hex>`). That is a token, not text: a `VERSION AS OF`
//! inside a string or a comment is never touched, and the placeholder survives the AST's
//! Display and a re-parse (DML rewrites re-parse). [`tag_of`] reads the name back.

use datafusion::sql::sqlparser::ast::{TableVersion, Value};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

const TAG_PLACEHOLDER: &str = "$tarn_tag_";

/// Rewrites `VERSION AS OF '<tag>'` to `VERSION AS OF $tarn_tag_<hex of tag>`.
pub fn mark_tags(tokens: &mut [TokenWithSpan]) {
    let significant: Vec<usize> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)))
        .map(|(i, _)| i)
        .collect();
    let is_word = |i: usize, kw: Keyword| matches!(&tokens[i].token, Token::Word(w) if w.quote_style.is_none() && w.keyword == kw);
    let mut replace = Vec::new();
    for w in significant.windows(4) {
        if is_word(w[0], Keyword::VERSION)
            && is_word(w[1], Keyword::AS)
            && is_word(w[2], Keyword::OF)
            && let Token::SingleQuotedString(tag) = &tokens[w[3]].token
        {
            replace.push((w[3], tag.clone()));
        }
    }
    for (i, tag) in replace {
        let hex: String = tag.bytes().map(|b| format!("{b:02x}")).collect();
        tokens[i].token = Token::Placeholder(format!("{TAG_PLACEHOLDER}{hex}"));
    }
}

/// The tag a placeholder made by [`mark_tags`] stands for.
pub fn tag_of(placeholder: &str) -> Option<String> {
    let hex = placeholder.strip_prefix(TAG_PLACEHOLDER)?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A table version as written, with the tag placeholder resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum VersionRef {
    /// `VERSION AS OF 42`.
    Snapshot(i64),
    /// `VERSION AS OF 'name'`.
    Tag(String),
    /// `VERSION AS OF $1`: a parameter of a prepared statement.
    Parameter(String),
    /// `FOR SYSTEM_TIME AS OF <expr>`: the expression, to be evaluated.
    Timestamp(Box<datafusion::sql::sqlparser::ast::Expr>),
}

/// What a table reference's version clause asks for; `Err` with a message for the forms
/// tarn does not read (`TIMESTAMP AS OF`, `AT(...)`, `CHANGES(...)`).
pub fn version_ref(version: &TableVersion) -> Result<VersionRef, String> {
    use datafusion::sql::sqlparser::ast::Expr;
    match version {
        TableVersion::ForSystemTimeAsOf(e) => Ok(VersionRef::Timestamp(Box::new(e.clone()))),
        TableVersion::VersionAsOf(Expr::Value(v)) => match &v.value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .map(VersionRef::Snapshot)
                .map_err(|_| format!("VERSION AS OF needs a snapshot id or a tag name, not {n}")),
            Value::Placeholder(p) => Ok(match tag_of(p) {
                Some(tag) => VersionRef::Tag(tag),
                None => VersionRef::Parameter(p.clone()),
            }),
            other => Err(format!(
                "VERSION AS OF needs a snapshot id or a tag name, not {other}"
            )),
        },
        other => Err(format!(
            "{other} is not supported; use FOR SYSTEM_TIME AS OF <timestamp> or VERSION AS OF \
             <snapshot id | 'tag'>"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_names_round_trip_through_placeholders() {
        for tag in ["month_end", "", "with space", "ünïcode", "a'b"] {
            let hex: String = tag.bytes().map(|b| format!("{b:02x}")).collect();
            assert_eq!(
                tag_of(&format!("{TAG_PLACEHOLDER}{hex}")).as_deref(),
                Some(tag)
            );
        }
        assert_eq!(tag_of("$1"), None);
        assert_eq!(tag_of("$tarn_tag_6"), None);
    }
}
