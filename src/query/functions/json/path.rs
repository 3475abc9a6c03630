//! A subset of PostgreSQL's SQL/JSON path language for `jsonb_path_exists`,
//! `jsonb_path_match`, `jsonb_path_query_array`, `jsonb_path_query_first` and the `@?` / `@@`
//! operators.
//!
//! Supported: `lax` (the default) and `strict` mode, `$`, member accessors `.key`, `."key"`,
//! `.*`, array accessors `[*]`, `[n]`, `[n to m]`, `[last]`, filters `? (...)` with `@`,
//! comparisons (`== != <> < <= > >=`), `&&`, `||`, `!`, `exists (...)`, and literals. In lax
//! mode arrays are unwrapped for member access and a non-array is its own single element, as
//! in PostgreSQL. A comparison of values of different types is unknown (false), never an
//! error. Anything else (arithmetic, item methods like `.size()`, `like_regex`, variables) is
//! refused with 0A000.

use datafusion::error::{DataFusionError, Result};

use super::value::Json;
use crate::query::functions::data_error;

#[derive(Debug, Clone)]
enum Accessor {
    Member(String),
    AnyMember,
    AnyElement,
    /// Index ranges; `None` bound is `last`.
    Elements(Vec<(Index, Index)>),
    Filter(Box<Pred>),
}

#[derive(Debug, Clone, Copy)]
enum Index {
    At(i64),
    Last,
}

#[derive(Debug, Clone)]
enum Operand {
    /// `$...` (root) or `@...` (current item) followed by accessors.
    Path {
        current: bool,
        steps: Vec<Accessor>,
    },
    Literal(Json),
}

#[derive(Debug, Clone)]
enum Pred {
    Cmp(Operand, String, Operand),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    Not(Box<Pred>),
    Exists(Operand),
}

/// A parsed path.
#[derive(Debug, Clone)]
pub struct JsonPath {
    strict: bool,
    /// The path itself, or a predicate (`@@` / `jsonb_path_match` of `$.a == 1`).
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    Path(Vec<Accessor>),
    Pred(Pred),
}

fn unsupported(path: &str) -> DataFusionError {
    data_error(
        "0A000",
        format!("jsonpath expression not supported by tarn: \"{path}\""),
    )
}

fn syntax(path: &str) -> DataFusionError {
    data_error(
        "42601",
        format!("syntax error in jsonpath expression \"{path}\""),
    )
}

struct Parser<'a> {
    text: &'a str,
    s: Vec<char>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.s.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<char> {
        self.ws();
        self.s.get(self.pos).copied()
    }
    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        let t: Vec<char> = token.chars().collect();
        if self.s[self.pos..].starts_with(&t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> String {
        self.ws();
        let start = self.pos;
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            self.pos += 1;
        }
        self.s[start..self.pos].iter().collect()
    }
    fn string(&mut self) -> Result<String> {
        // A double-quoted string with JSON's escapes.
        self.ws();
        let start = self.pos;
        if self.s.get(self.pos) != Some(&'"') {
            return Err(syntax(self.text));
        }
        self.pos += 1;
        while let Some(c) = self.s.get(self.pos) {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '"' => {
                    let lit: String = self.s[start..self.pos].iter().collect();
                    return match Json::parse(&lit) {
                        Ok(Json::String(s)) => Ok(s),
                        _ => Err(syntax(self.text)),
                    };
                }
                _ => {}
            }
        }
        Err(syntax(self.text))
    }
    fn number(&mut self) -> Result<Json> {
        self.ws();
        let start = self.pos;
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.pos += 1;
        }
        let n: String = self.s[start..self.pos].iter().collect();
        match Json::parse(&n) {
            Ok(v @ Json::Number(_)) => Ok(v),
            _ => Err(syntax(self.text)),
        }
    }
    fn index(&mut self) -> Result<Index> {
        if self.eat("last") {
            return Ok(Index::Last);
        }
        match self.number()? {
            Json::Number(n) => n
                .parse::<i64>()
                .map(Index::At)
                .map_err(|_| unsupported(self.text)),
            _ => Err(syntax(self.text)),
        }
    }
    fn accessors(&mut self) -> Result<Vec<Accessor>> {
        let mut steps = Vec::new();
        loop {
            match self.peek() {
                Some('.') => {
                    self.pos += 1;
                    if self.eat("*") {
                        steps.push(Accessor::AnyMember);
                    } else if self.peek() == Some('"') {
                        steps.push(Accessor::Member(self.string()?));
                    } else {
                        let w = self.word();
                        if w.is_empty() {
                            return Err(syntax(self.text));
                        }
                        if self.peek() == Some('(') {
                            return Err(unsupported(self.text));
                        }
                        steps.push(Accessor::Member(w));
                    }
                }
                Some('[') => {
                    self.pos += 1;
                    if self.eat("*") {
                        if !self.eat("]") {
                            return Err(syntax(self.text));
                        }
                        steps.push(Accessor::AnyElement);
                        continue;
                    }
                    let mut ranges = Vec::new();
                    loop {
                        let from = self.index()?;
                        let to = if self.eat("to") { self.index()? } else { from };
                        ranges.push((from, to));
                        if self.eat(",") {
                            continue;
                        }
                        if self.eat("]") {
                            break;
                        }
                        return Err(syntax(self.text));
                    }
                    steps.push(Accessor::Elements(ranges));
                }
                Some('?') => {
                    self.pos += 1;
                    if !self.eat("(") {
                        return Err(syntax(self.text));
                    }
                    let pred = self.or()?;
                    if !self.eat(")") {
                        return Err(syntax(self.text));
                    }
                    steps.push(Accessor::Filter(Box::new(pred)));
                }
                _ => return Ok(steps),
            }
        }
    }
    fn operand(&mut self) -> Result<Operand> {
        match self.peek() {
            Some('$') => {
                self.pos += 1;
                if self.s.get(self.pos).is_some_and(|c| c.is_alphanumeric()) {
                    return Err(unsupported(self.text)); // $variable
                }
                Ok(Operand::Path {
                    current: false,
                    steps: self.accessors()?,
                })
            }
            Some('@') => {
                self.pos += 1;
                Ok(Operand::Path {
                    current: true,
                    steps: self.accessors()?,
                })
            }
            Some('"') => Ok(Operand::Literal(Json::String(self.string()?))),
            Some(c) if c.is_ascii_digit() || c == '-' => Ok(Operand::Literal(self.number()?)),
            _ => {
                let w = self.word();
                match w.as_str() {
                    "true" => Ok(Operand::Literal(Json::Bool(true))),
                    "false" => Ok(Operand::Literal(Json::Bool(false))),
                    "null" => Ok(Operand::Literal(Json::Null)),
                    "" => Err(syntax(self.text)),
                    _ => Err(unsupported(self.text)),
                }
            }
        }
    }
    fn primary(&mut self) -> Result<Pred> {
        if self.eat("!") {
            if !self.eat("(") {
                return Err(syntax(self.text));
            }
            let p = self.or()?;
            if !self.eat(")") {
                return Err(syntax(self.text));
            }
            return Ok(Pred::Not(Box::new(p)));
        }
        if self.peek() == Some('(') {
            self.pos += 1;
            let p = self.or()?;
            if !self.eat(")") {
                return Err(syntax(self.text));
            }
            return Ok(p);
        }
        let save = self.pos;
        if self.word() == "exists" && self.eat("(") {
            let o = self.operand()?;
            if !self.eat(")") {
                return Err(syntax(self.text));
            }
            return Ok(Pred::Exists(o));
        }
        self.pos = save;
        let left = self.operand()?;
        for op in ["==", "!=", "<>", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                let right = self.operand()?;
                return Ok(Pred::Cmp(left, op.to_owned(), right));
            }
        }
        Err(unsupported(self.text))
    }
    fn and(&mut self) -> Result<Pred> {
        let mut p = self.primary()?;
        while self.eat("&&") {
            p = Pred::And(Box::new(p), Box::new(self.primary()?));
        }
        Ok(p)
    }
    fn or(&mut self) -> Result<Pred> {
        let mut p = self.and()?;
        while self.eat("||") {
            p = Pred::Or(Box::new(p), Box::new(self.and()?));
        }
        Ok(p)
    }
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<JsonPath> {
        let mut p = Parser {
            text,
            s: text.chars().collect(),
            pos: 0,
        };
        let save = p.pos;
        let mode = p.word();
        let strict = match mode.as_str() {
            "strict" => true,
            "lax" => false,
            _ => {
                p.pos = save;
                false
            }
        };
        let start = p.pos;
        // A predicate (`$.a == 1`) or a path (`$.a[*] ? (@ > 1)`).
        let body = match p.or() {
            Ok(pred) if p.peek().is_none() => Body::Pred(pred),
            _ => {
                p.pos = start;
                if !p.eat("$") {
                    return Err(unsupported(text));
                }
                let steps = p.accessors()?;
                if p.peek().is_some() {
                    return Err(unsupported(text));
                }
                Body::Path(steps)
            }
        };
        Ok(JsonPath { strict, body })
    }

    /// The items the path selects in `doc` (a predicate path yields its boolean).
    pub fn query(&self, doc: &Json) -> Vec<Json> {
        match &self.body {
            Body::Path(steps) => self.walk(doc, doc, steps),
            Body::Pred(pred) => vec![match self.pred(doc, doc, pred) {
                Some(b) => Json::Bool(b),
                None => Json::Null,
            }],
        }
    }

    fn walk(&self, root: &Json, item: &Json, steps: &[Accessor]) -> Vec<Json> {
        let Some((step, rest)) = steps.split_first() else {
            return vec![item.clone()];
        };
        let next: Vec<Json> = match (step, item) {
            (Accessor::Member(_) | Accessor::AnyMember, Json::Array(items)) if !self.strict => {
                return items
                    .iter()
                    .flat_map(|i| self.walk(root, i, steps))
                    .collect();
            }
            (Accessor::Member(k), v) => v.get(k).cloned().into_iter().collect(),
            (Accessor::AnyMember, Json::Object(m)) => m.iter().map(|(_, v)| v.clone()).collect(),
            (Accessor::AnyMember, _) => vec![],
            (Accessor::AnyElement, Json::Array(items)) => items.clone(),
            (Accessor::AnyElement, v) if !self.strict => vec![v.clone()],
            (Accessor::AnyElement, _) => vec![],
            (Accessor::Elements(ranges), v) => {
                let items = match v {
                    Json::Array(items) => items.clone(),
                    other if !self.strict => vec![other.clone()],
                    _ => vec![],
                };
                let last = items.len() as i64 - 1;
                let at = |i: Index| match i {
                    Index::At(n) => n,
                    Index::Last => last,
                };
                let mut out = Vec::new();
                for (from, to) in ranges {
                    for i in at(*from)..=at(*to) {
                        if let Some(v) = usize::try_from(i).ok().and_then(|i| items.get(i)) {
                            out.push(v.clone());
                        }
                    }
                }
                out
            }
            (Accessor::Filter(pred), v) => {
                let candidates = match v {
                    Json::Array(items) if !self.strict => items.clone(),
                    other => vec![other.clone()],
                };
                candidates
                    .into_iter()
                    .filter(|c| self.pred(root, c, pred) == Some(true))
                    .collect()
            }
        };
        next.iter().flat_map(|n| self.walk(root, n, rest)).collect()
    }

    fn operand(&self, root: &Json, item: &Json, o: &Operand) -> Vec<Json> {
        match o {
            Operand::Literal(v) => vec![v.clone()],
            Operand::Path { current, steps } => {
                let start = if *current { item } else { root };
                self.walk(root, start, steps)
            }
        }
    }

    /// Three-valued: `None` is unknown.
    fn pred(&self, root: &Json, item: &Json, p: &Pred) -> Option<bool> {
        match p {
            Pred::And(a, b) => match (self.pred(root, item, a), self.pred(root, item, b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Pred::Or(a, b) => match (self.pred(root, item, a), self.pred(root, item, b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Pred::Not(a) => self.pred(root, item, a).map(|b| !b),
            Pred::Exists(o) => Some(!self.operand(root, item, o).is_empty()),
            Pred::Cmp(l, op, r) => {
                let unwrap = |v: Vec<Json>| -> Vec<Json> {
                    v.into_iter()
                        .flat_map(|v| match v {
                            Json::Array(items) if !self.strict => items,
                            other => vec![other],
                        })
                        .collect()
                };
                let (ls, rs) = (
                    unwrap(self.operand(root, item, l)),
                    unwrap(self.operand(root, item, r)),
                );
                let mut unknown = false;
                for a in &ls {
                    for b in &rs {
                        match compare(a, b) {
                            Some(ord) => {
                                let hit = match op.as_str() {
                                    "==" => ord.is_eq(),
                                    "!=" | "<>" => !ord.is_eq(),
                                    "<" => ord.is_lt(),
                                    "<=" => ord.is_le(),
                                    ">" => ord.is_gt(),
                                    _ => ord.is_ge(),
                                };
                                if hit {
                                    return Some(true);
                                }
                            }
                            None => unknown = true,
                        }
                    }
                }
                if unknown { None } else { Some(false) }
            }
        }
    }
}

fn compare(a: &Json, b: &Json) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            x.parse::<f64>().ok()?.partial_cmp(&y.parse::<f64>().ok()?)
        }
        (Json::String(x), Json::String(y)) => Some(x.cmp(y)),
        (Json::Bool(x), Json::Bool(y)) => Some(x.cmp(y)),
        (Json::Null, Json::Null) => Some(std::cmp::Ordering::Equal),
        // null compared with a non-null value is false, not unknown.
        (Json::Null, _) | (_, Json::Null) => Some(std::cmp::Ordering::Less),
        _ => None,
    }
}

/// The path functions, and `tarn_jsonb_path_exists_op` / `tarn_jsonb_path_match_op` for
/// `@?` / `@@`.
pub fn functions() -> Vec<datafusion::logical_expr::ScalarUDF> {
    use super::{Ret, any_args, json_fn, jsonb_arg, text, text_arg};
    use datafusion::common::ScalarValue;

    fn run(a: &[ScalarValue]) -> Result<Option<Vec<Json>>> {
        let (Some(doc), Some(path)) = (jsonb_arg(&a[0])?, text_arg(&a[1])) else {
            return Ok(None);
        };
        Ok(Some(JsonPath::parse(path)?.query(&doc)))
    }
    fn exists(a: &[ScalarValue]) -> Result<ScalarValue> {
        Ok(ScalarValue::Boolean(run(a)?.map(|items| !items.is_empty())))
    }
    fn matches(a: &[ScalarValue]) -> Result<ScalarValue> {
        Ok(ScalarValue::Boolean(run(a)?.and_then(
            |items| match items.as_slice() {
                [Json::Bool(b)] => Some(*b),
                _ => None,
            },
        )))
    }
    let args = || any_args(&[2, 3, 4]);
    vec![
        json_fn("jsonb_path_exists", args(), Ret::Bool, |a, _| exists(a)),
        json_fn("tarn_jsonb_path_exists_op", args(), Ret::Bool, |a, _| {
            exists(a)
        }),
        json_fn("jsonb_path_match", args(), Ret::Bool, |a, _| matches(a)),
        json_fn("tarn_jsonb_path_match_op", args(), Ret::Bool, |a, _| {
            matches(a)
        }),
        json_fn("jsonb_path_query_array", args(), Ret::Jsonb, |a, _| {
            Ok(text(
                run(a)?.map(|items| Json::Array(items).to_jsonb_text()),
            ))
        }),
        // The rows of `jsonb_path_query` (a set-returning function, see `sql/json.rs`).
        json_fn("tarn_jsonb_path_rows", args(), Ret::TextList, |a, _| {
            let values: Vec<ScalarValue> = run(a)?
                .unwrap_or_default()
                .into_iter()
                .map(|v| ScalarValue::Utf8(Some(v.to_jsonb_text())))
                .collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &values,
                &datafusion::arrow::datatypes::DataType::Utf8,
            )))
        }),
        json_fn("jsonb_path_query_first", args(), Ret::Jsonb, |a, _| {
            Ok(text(run(a)?.and_then(|items| {
                items.into_iter().next().map(|v| v.to_jsonb_text())
            })))
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(doc: &str, path: &str) -> String {
        let doc = Json::parse_jsonb(doc).unwrap();
        Json::Array(JsonPath::parse(path).unwrap().query(&doc)).to_jsonb_text()
    }

    #[test]
    fn paths_and_filters() {
        assert_eq!(q(r#"{"a": [1, 2, 3, 4]}"#, "$.a[*] ? (@ > 2)"), "[3, 4]");
        assert_eq!(q(r#"{"a": [1, 2]}"#, "$.a[*] ? (@ == 2)"), "[2]");
        assert_eq!(q(r#"{"a": [{"b": 1}, {"b": 5}]}"#, "$.a.b"), "[1, 5]");
        assert_eq!(q(r#"{"a": [1, 2, 3]}"#, "$.a[last]"), "[3]");
        assert_eq!(q(r#"{"a": [1, 2, 3]}"#, "$.a[0 to 1]"), "[1, 2]");
        assert_eq!(q(r#"{"a": 1}"#, "$.a == 1"), "[true]");
        assert_eq!(
            q(
                r#"[{"n": "x", "v": 1}, {"n": "y", "v": 3}]"#,
                r#"$[*] ? (@.v > 1 && @.n == "y").n"#
            ),
            r#"["y"]"#
        );
        assert!(JsonPath::parse("$.a.size()").is_err());
    }
}
