//! The json/jsonb value model: PostgreSQL's JSON grammar, its jsonb normal form and its two
//! ways of printing.
//!
//! tarn carries json and jsonb values as text (a Utf8 column tagged with its PostgreSQL type).
//! `json` keeps the text exactly as given; `jsonb` is PostgreSQL's normal form: object keys
//! sorted by length, then bytes, a repeated key keeps its last value, and the text is printed
//! with `", "` and `": "`. Numbers keep their digits (`2.50` stays `2.50`, as numeric does);
//! only an exponent is spelled out (`1e2` is `100`). Text that does not parse is 22P02
//! "invalid input syntax for type json", whichever of the two types was asked for.

use datafusion::error::{DataFusionError, Result};

use super::super::data_error;

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number as written (valid JSON number syntax).
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in the order held: as written, or jsonb's order once [`Json::normalize`]d.
    Object(Vec<(String, Json)>),
    /// A `json` value embedded as its own text (json keeps what it was given).
    Raw(String),
}

/// 22P02 for text that is not JSON.
pub fn invalid_json(text: &str) -> DataFusionError {
    let _ = text;
    data_error("22P02", "invalid input syntax for type json")
}

impl Json {
    /// Parses `text` (surrounding white space allowed).
    pub fn parse(text: &str) -> Result<Json> {
        let mut p = Parser::new(text);
        p.ws();
        let v = p.value()?;
        p.ws();
        if p.pos != p.s.len() {
            return Err(invalid_json(text));
        }
        Ok(v)
    }

    /// Parses `text` into jsonb's normal form.
    pub fn parse_jsonb(text: &str) -> Result<Json> {
        Ok(Json::parse(text)?.normalize())
    }

    /// jsonb's normal form: keys sorted by (length, bytes), the last of repeated keys kept,
    /// numbers without exponent, embedded json text parsed.
    pub fn normalize(self) -> Json {
        match self {
            Json::Number(n) => Json::Number(plain_number(&n)),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::normalize).collect()),
            Json::Object(members) => {
                let mut members: Vec<(String, Json)> = members
                    .into_iter()
                    .rev()
                    .map(|(k, v)| (k, v.normalize()))
                    .collect();
                // Stable: among equal keys the last written (first after `rev`) stays first.
                members.sort_by(|a, b| key_order(&a.0, &b.0));
                members.dedup_by(|later, earlier| later.0 == earlier.0);
                Json::Object(members)
            }
            Json::Raw(text) => Json::parse(&text)
                .map(Json::normalize)
                .unwrap_or(Json::Null),
            other => other,
        }
    }

    /// `jsonb_typeof`'s answer.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
            Json::Raw(text) => Json::parse(text).map(|v| v.type_name()).unwrap_or("null"),
        }
    }

    /// jsonb's text: `{"a": 1, "b": [1, 2]}`.
    pub fn to_jsonb_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, ", ", ": ");
        out
    }

    /// json's text as PostgreSQL's json constructors print composites: `{"f1":1,"f2":"x"}`.
    pub fn to_json_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, ",", ":");
        out
    }

    fn write(&self, out: &mut String, item_sep: &str, key_sep: &str) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => escape_into(out, s),
            Json::Raw(text) => out.push_str(text.trim()),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    item.write(out, item_sep, key_sep);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    escape_into(out, k);
                    out.push_str(key_sep);
                    v.write(out, item_sep, key_sep);
                }
                out.push('}');
            }
        }
    }

    /// `jsonb_pretty`: four spaces per level, one member or element per line.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, level: usize) {
        let indent = |out: &mut String, level: usize| {
            for _ in 0..level {
                out.push_str("    ");
            }
        };
        match self {
            Json::Array(items) if !items.is_empty() => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, level + 1);
                    item.write_pretty(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push(']');
            }
            Json::Object(members) if !members.is_empty() => {
                out.push_str("{\n");
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, level + 1);
                    escape_into(out, k);
                    out.push_str(": ");
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push('}');
            }
            other => other.write(out, ", ", ": "),
        }
    }

    /// The text `->>` gives: a string's contents, NULL for json null, else the value's text.
    pub fn to_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => Some(other.to_jsonb_text()),
        }
    }

    /// Scalar equality as jsonb compares values (numbers by value).
    pub fn same_scalar(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Number(a), Json::Number(b)) => {
                a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
            }
            (Json::Array(_) | Json::Object(_), _) | (_, Json::Array(_) | Json::Object(_)) => false,
            (a, b) => a == b,
        }
    }

    /// `a @> b`: PostgreSQL's jsonb containment.
    pub fn contains(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Object(a), Json::Object(b)) => b.iter().all(|(k, vb)| {
                a.iter()
                    .rev()
                    .find(|(ka, _)| ka == k)
                    .is_some_and(|(_, va)| match vb {
                        Json::Array(_) | Json::Object(_) => va.contains(vb),
                        _ => va.same_scalar(vb),
                    })
            }),
            (Json::Array(a), Json::Array(b)) => b.iter().all(|eb| {
                a.iter().any(|ea| match (ea, eb) {
                    (Json::Array(_), Json::Array(_)) | (Json::Object(_), Json::Object(_)) => {
                        ea.contains(eb)
                    }
                    _ => ea.same_scalar(eb),
                })
            }),
            // A top-level array contains a scalar it holds.
            (Json::Array(a), scalar) if !matches!(scalar, Json::Object(_)) => {
                a.iter().any(|e| e.same_scalar(scalar))
            }
            (a, b) => a.same_scalar(b),
        }
    }

    /// `a ? key`: an object key, or a string element of an array, or the string itself.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(m) => m.iter().any(|(k, _)| k == key),
            Json::Array(items) => items
                .iter()
                .any(|e| matches!(e, Json::String(s) if s == key)),
            Json::String(s) => s == key,
            _ => false,
        }
    }

    /// Member `key` of an object (the last one of that name).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Element `index` of an array; negative counts from the end.
    pub fn at(&self, index: i64) -> Option<&Json> {
        match self {
            Json::Array(items) => resolve_index(items.len(), index).and_then(|i| items.get(i)),
            _ => None,
        }
    }

    /// One step of a path (`#>`): a key of an object, an integer index of an array.
    pub fn step(&self, step: &str) -> Option<&Json> {
        match self {
            Json::Object(_) => self.get(step),
            Json::Array(_) => step.trim().parse::<i64>().ok().and_then(|i| self.at(i)),
            _ => None,
        }
    }
}

/// An index into `len` elements (negative from the end), if in range.
pub fn resolve_index(len: usize, index: i64) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// jsonb's key order: shorter keys first, then bytewise.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A JSON string literal as PostgreSQL escapes it.
pub fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` as a JSON string literal.
pub fn quoted(s: &str) -> String {
    let mut out = String::new();
    escape_into(&mut out, s);
    out
}

/// A JSON number without exponent, as numeric prints it (`1.5e1` → `15`, `1e-2` → `0.01`).
fn plain_number(n: &str) -> String {
    let Some(e) = n.find(['e', 'E']) else {
        return n.to_owned();
    };
    let (mantissa, exp) = (&n[..e], &n[e + 1..]);
    let Ok(exp) = exp.parse::<i64>() else {
        return n.to_owned();
    };
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{frac}");
    // The value is digits × 10^(point - len(digits)), point = len(int) + exp.
    let point = int.len() as i64 + exp;
    let scale = (frac.len() as i64 - exp).max(0) as usize;
    let mut int_part: String;
    let mut frac_part: String;
    if point <= 0 {
        int_part = "0".to_owned();
        frac_part = "0".repeat((-point) as usize) + &digits;
    } else if point as usize >= digits.len() {
        int_part = digits.clone() + &"0".repeat(point as usize - digits.len());
        frac_part = String::new();
    } else {
        int_part = digits[..point as usize].to_owned();
        frac_part = digits[point as usize..].to_owned();
    }
    let trimmed = int_part.trim_start_matches('0');
    int_part = if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    };
    frac_part.truncate(scale.min(frac_part.len()));
    while frac_part.len() < scale {
        frac_part.push('0');
    }
    let zero = int_part == "0" && frac_part.bytes().all(|b| b == b'0');
    let sign = if negative && !zero { "-" } else { "" };
    if frac_part.is_empty() {
        format!("{sign}{int_part}")
    } else {
        format!("{sign}{int_part}.{frac_part}")
    }
}

/// The members or elements of a json text's top container, each as its own text (json
/// operators answer with the text as given); `None` for a scalar.
pub enum RawChildren<'a> {
    Array(Vec<&'a str>),
    Object(Vec<(String, &'a str)>),
    Scalar(Json),
}

/// Splits a json text one level deep (see [`RawChildren`]).
pub fn raw_children(text: &str) -> Result<RawChildren<'_>> {
    let mut p = Parser::new(text);
    p.ws();
    let out = match p.peek() {
        Some(b'[') => {
            p.pos += 1;
            let mut items = Vec::new();
            p.ws();
            if p.peek() == Some(b']') {
                p.pos += 1;
            } else {
                loop {
                    p.ws();
                    let start = p.pos;
                    p.value()?;
                    items.push(&text[start..p.pos]);
                    p.ws();
                    match p.next() {
                        Some(b',') => continue,
                        Some(b']') => break,
                        _ => return Err(invalid_json(text)),
                    }
                }
            }
            RawChildren::Array(items)
        }
        Some(b'{') => {
            p.pos += 1;
            let mut members = Vec::new();
            p.ws();
            if p.peek() == Some(b'}') {
                p.pos += 1;
            } else {
                loop {
                    p.ws();
                    let key = p.string()?;
                    p.ws();
                    if p.next() != Some(b':') {
                        return Err(invalid_json(text));
                    }
                    p.ws();
                    let start = p.pos;
                    p.value()?;
                    members.push((key, &text[start..p.pos]));
                    p.ws();
                    match p.next() {
                        Some(b',') => continue,
                        Some(b'}') => break,
                        _ => return Err(invalid_json(text)),
                    }
                }
            }
            RawChildren::Object(members)
        }
        _ => RawChildren::Scalar(p.value()?),
    };
    p.ws();
    if p.pos != p.s.len() {
        return Err(invalid_json(text));
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            s: text.as_bytes(),
            pos: 0,
        }
    }

    fn err(&self) -> DataFusionError {
        invalid_json(self.text)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek();
        self.pos += 1;
        b
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.err())
        }
    }

    fn value(&mut self) -> Result<Json> {
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let mut members = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    if self.next() != Some(b':') {
                        return Err(self.err());
                    }
                    self.ws();
                    members.push((key, self.value()?));
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(Json::Object(members)),
                        _ => return Err(self.err()),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    self.ws();
                    items.push(self.value()?);
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b']') => return Ok(Json::Array(items)),
                        _ => return Err(self.err()),
                    }
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = self.digits();
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return Err(self.err());
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.err());
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err());
            }
        }
        Ok(Json::Number(self.text[start..self.pos].to_owned()))
    }

    fn hex4(&mut self) -> Result<u32> {
        let hex = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err())?;
        let hex = std::str::from_utf8(hex).map_err(|_| self.err())?;
        let v = u32::from_str_radix(hex, 16).map_err(|_| self.err())?;
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String> {
        if self.next() != Some(b'"') {
            return Err(self.err());
        }
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.next() {
                None => return Err(self.err()),
                Some(b'"') => break,
                Some(b'\\') => {
                    let c = match self.next() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if self.next() != Some(b'\\') || self.next() != Some(b'u') {
                                    return Err(self.err());
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err());
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or_else(|| self.err())?
                        }
                        _ => return Err(self.err()),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Some(b) if b < 0x20 => return Err(self.err()),
                Some(b) => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonb(text: &str) -> String {
        Json::parse_jsonb(text).unwrap().to_jsonb_text()
    }

    #[test]
    fn jsonb_normal_form() {
        assert_eq!(jsonb(r#"{"b": 1,   "a": 2}"#), r#"{"a": 2, "b": 1}"#);
        assert_eq!(jsonb(r#"{"a": 1, "a": 2}"#), r#"{"a": 2}"#);
        assert_eq!(
            jsonb(r#"{"name": "x", "age": 1, "address": {"zip": 1, "city": 2}}"#),
            r#"{"age": 1, "name": "x", "address": {"zip": 1, "city": 2}}"#
        );
        assert_eq!(
            jsonb(r#"[1, 2.50, "x", null, true]"#),
            r#"[1, 2.50, "x", null, true]"#
        );
        assert_eq!(jsonb("[1e2, 1.5e1, -1E-2, 0e0]"), "[100, 15, -0.01, 0]");
        assert_eq!(jsonb(r#""a\"b\u00e9\n""#), r#""a\"bé\n""#);
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            r#"{"a": 1"#,
            r#"{"a": }"#,
            "01",
            "1.",
            "[1,]",
            "tru",
            "'a'",
            "",
        ] {
            assert!(Json::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn containment_and_keys() {
        let doc = Json::parse_jsonb(r#"{"a":1, "b":2, "tags": ["x", "y"]}"#).unwrap();
        assert!(doc.contains(&Json::parse(r#"{"b":2}"#).unwrap()));
        assert!(doc.contains(&Json::parse(r#"{"tags": ["y"]}"#).unwrap()));
        assert!(!doc.contains(&Json::parse(r#"{"tags": "y"}"#).unwrap()));
        assert!(doc.has_key("b") && !doc.has_key("z"));
        assert!(Json::parse(r#"["a","b"]"#).unwrap().has_key("b"));
    }

    #[test]
    fn pretty_prints_like_postgres() {
        let v = Json::parse_jsonb(r#"{"a": [1, {"b": 2}], "c": []}"#).unwrap();
        assert_eq!(
            v.pretty(),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": 2\n        }\n    ],\n    \"c\": []\n}"
        );
    }

    #[test]
    fn raw_children_keep_their_text() {
        let RawChildren::Array(items) = raw_children(r#"[{"a":"foo"}, {"b" : 1}]"#).unwrap() else {
            panic!()
        };
        assert_eq!(items, [r#"{"a":"foo"}"#, r#"{"b" : 1}"#]);
    }
}
