//! Partition expiration options (Paimon's `partition.expiration-*` and
//! `partition.timestamp-*`, `CoreOptions`) with Paimon's defaults, parsed and checked; and the
//! time a partition's values stand for (Paimon's `PartitionTimeExtractor`). Which partitions
//! expire, and dropping them, is `maintenance/partition_expire.rs`.
//!
//! The time of a partition: `partition.timestamp-pattern` with each `$<partition column>`
//! replaced by the partition's value (longer column names first, so `$dt` does not match inside
//! `$dt1`), or the first partition value when unset; read with `partition.timestamp-formatter`
//! (Java `DateTimeFormatter` letters: tarn reads `yyyy`, `MM`/`M`, `dd`/`d`, `HH`/`H`, `mm`/`m`,
//! `ss`/`s` and quoted or other literal characters) as a date-time, or as a date at midnight;
//! without a formatter as `yyyy-M-d[ H:m:s[.fraction]]`. Values are the partition folder texts
//! (a DATE partition as `2026-01-01`, where Java's extractor would see the day number).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use crate::storage::spec::options::parse_duration;

pub const EXPIRATION_TIME: &str = "partition.expiration-time";
pub const EXPIRATION_CHECK_INTERVAL: &str = "partition.expiration-check-interval";
pub const EXPIRATION_STRATEGY: &str = "partition.expiration-strategy";
pub const EXPIRATION_MAX_NUM: &str = "partition.expiration-max-num";
pub const TIMESTAMP_FORMATTER: &str = "partition.timestamp-formatter";
pub const TIMESTAMP_PATTERN: &str = "partition.timestamp-pattern";

/// Paimon's `partition.expiration-check-interval` default.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(3600);
/// Paimon's `partition.expiration-max-num` default.
pub const DEFAULT_MAX_NUM: usize = 100;

/// A table's partition expiration, when `partition.expiration-time` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionExpireOptions {
    pub expiration_time: Duration,
    pub check_interval: Duration,
    pub max_num: usize,
    pub time: TimeExtractor,
}

/// Reads a partition's time from its values (`partition.timestamp-pattern`/`-formatter`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimeExtractor {
    pub pattern: Option<String>,
    pub formatter: Option<Formatter>,
}

/// A `DateTimeFormatter` pattern, as the pieces tarn reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Formatter(Vec<Piece>);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// A field of exactly `width` digits (`MM`), or 1..=2 digits when `width` is 1 (`M`).
    Digits(Field, usize),
    Literal(char),
}

impl Formatter {
    /// Parses a pattern; an error names what tarn does not read.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut pieces = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                // A quoted literal ('' is a quote).
                let mut j = i + 1;
                while j < chars.len() && chars[j] != '\'' {
                    pieces.push(Piece::Literal(chars[j]));
                    j += 1;
                }
                if j == i + 1 && j < chars.len() {
                    pieces.push(Piece::Literal('\''));
                }
                i = j + 1;
                continue;
            }
            if !c.is_ascii_alphabetic() {
                pieces.push(Piece::Literal(c));
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|&&x| x == c).count();
            let field = match c {
                'y' | 'u' => Field::Year,
                'M' => Field::Month,
                'd' => Field::Day,
                'H' => Field::Hour,
                'm' => Field::Minute,
                's' => Field::Second,
                other => {
                    return Err(format!(
                        "pattern letter '{other}' is not read by tarn (it reads yyyy, MM, dd, \
                         HH, mm, ss)"
                    ));
                }
            };
            let ok = match field {
                Field::Year => run == 4,
                _ => run <= 2,
            };
            if !ok {
                return Err(format!(
                    "'{}' is not read by tarn (years are yyyy, other fields one or two letters)",
                    chars[i..i + run].iter().collect::<String>()
                ));
            }
            pieces.push(Piece::Digits(field, run));
            i += run;
        }
        let has = |f: Field| {
            pieces
                .iter()
                .any(|p| matches!(p, Piece::Digits(g, _) if *g == f))
        };
        if !(has(Field::Year) && has(Field::Month) && has(Field::Day)) {
            return Err("the pattern needs a year, a month and a day (yyyy, MM, dd)".to_owned());
        }
        Ok(Formatter(pieces))
    }

    /// Reads `text` as the whole pattern; fields the pattern lacks are 0.
    fn read(&self, text: &str) -> Option<NaiveDateTime> {
        let bytes: Vec<char> = text.chars().collect();
        let mut pos = 0;
        let mut values = [0u32; 6];
        for piece in &self.0 {
            match piece {
                Piece::Literal(c) => {
                    if bytes.get(pos) != Some(c) {
                        return None;
                    }
                    pos += 1;
                }
                Piece::Digits(field, width) => {
                    let max = if *width == 1 { 2 } else { *width };
                    let digits = bytes[pos..]
                        .iter()
                        .take(max)
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    let whole = if *width == 1 {
                        digits >= 1
                    } else {
                        digits == *width
                    };
                    if !whole {
                        return None;
                    }
                    let n: u32 = bytes[pos..pos + digits]
                        .iter()
                        .collect::<String>()
                        .parse()
                        .ok()?;
                    values[*field as usize] = n;
                    pos += digits;
                }
            }
        }
        if pos != bytes.len() {
            return None;
        }
        let date = NaiveDate::from_ymd_opt(values[0] as i32, values[1], values[2])?;
        let time = NaiveTime::from_hms_opt(values[3], values[4], values[5])?;
        Some(date.and_time(time))
    }
}

impl TimeExtractor {
    /// The time a partition stands for: `keys` and `values` (its values' texts, `None` for
    /// NULL) in partition-key order. `None` when it cannot be read (not a time, a NULL): such a
    /// partition never expires, as in Paimon.
    pub fn extract(&self, keys: &[String], values: &[Option<String>]) -> Option<NaiveDateTime> {
        let text = match &self.pattern {
            None => values.first()?.clone()?,
            Some(pattern) => replace_pattern(pattern, keys, values)?,
        };
        match &self.formatter {
            Some(f) => f.read(&text),
            None => read_default(&text),
        }
    }
}

/// `pattern` with each `$key` replaced by its value (longest keys first).
fn replace_pattern(pattern: &str, keys: &[String], values: &[Option<String>]) -> Option<String> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(keys[i].len()));
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '$'
            && let Some(&i) = order.iter().find(|&&i| rest[1..].starts_with(&keys[i]))
        {
            out.push_str(values.get(i)?.as_deref()?);
            rest = &rest[1 + keys[i].len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// Paimon's default: `yyyy-M-d[ H:m:s[.fraction]]`, else a date at midnight.
fn read_default(text: &str) -> Option<NaiveDateTime> {
    let (date, time) = match text.split_once(' ') {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let numbers = |s: &str, sep: char| -> Option<Vec<u32>> {
        s.split(sep)
            .map(|p| {
                (!p.is_empty() && p.len() <= 10 && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect()
    };
    let d = numbers(date, '-')?;
    let [y, m, day] = d.as_slice() else {
        return None;
    };
    let date = NaiveDate::from_ymd_opt(*y as i32, *m, *day)?;
    let time = match time {
        None => NaiveTime::MIN,
        Some(t) => {
            let (hms, fraction) = match t.split_once('.') {
                Some((hms, f)) => (hms, Some(f)),
                None => (t, None),
            };
            let v = numbers(hms, ':')?;
            let [h, mi, s] = v.as_slice() else {
                return None;
            };
            let nanos = match fraction {
                None => 0,
                Some(f) if (1..=9).contains(&f.len()) && f.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("{f:0<9}").parse().ok()?
                }
                Some(_) => return None,
            };
            NaiveTime::from_hms_nano_opt(*h, *mi, *s, nanos)?
        }
    };
    Some(date.and_time(time))
}

impl PartitionExpireOptions {
    /// The options of a table; `Ok(None)` when `partition.expiration-time` is unset.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<Option<Self>, String> {
        let get = |k: &str| options.get(k).map(|v| v.trim());
        if let Some(strategy) = get(EXPIRATION_STRATEGY)
            && !strategy.eq_ignore_ascii_case("values-time")
        {
            return Err(format!(
                "{EXPIRATION_STRATEGY} '{strategy}' is not supported: tarn expires partitions by \
                 the time in their values (values-time)"
            ));
        }
        let check_interval = match get(EXPIRATION_CHECK_INTERVAL) {
            Some(v) => parse_duration(v)?,
            None => DEFAULT_CHECK_INTERVAL,
        };
        let max_num = match get(EXPIRATION_MAX_NUM) {
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(format!("{EXPIRATION_MAX_NUM} must be a count >= 1")),
            },
            None => DEFAULT_MAX_NUM,
        };
        let formatter = get(TIMESTAMP_FORMATTER).map(Formatter::parse).transpose()?;
        let pattern = get(TIMESTAMP_PATTERN).map(str::to_owned);
        let Some(expiration) = get(EXPIRATION_TIME) else {
            return Ok(None);
        };
        let expiration_time = parse_duration(expiration)?;
        Ok(Some(Self {
            expiration_time,
            check_interval,
            max_num,
            time: TimeExtractor { pattern, formatter },
        }))
    }

    /// Checks one option alone (CREATE TABLE, ALTER TABLE SET).
    pub fn check(key: &str, value: &str) -> Result<(), String> {
        let alone = BTreeMap::from([(key.to_owned(), value.to_owned())]);
        Self::from_options(&alone).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    fn values(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn the_default_reads_dates_and_date_times_of_the_first_value() {
        let x = TimeExtractor::default();
        let k = keys(&["dt", "hour"]);
        assert_eq!(
            x.extract(&k, &values(&["2026-01-02", "5"])),
            Some(at("2026-01-02 00:00:00"))
        );
        assert_eq!(
            x.extract(&k, &values(&["2026-1-2 3:04:05.5", "5"]))
                .map(|t| t.to_string()),
            Some("2026-01-02 03:04:05.500".to_owned())
        );
        assert_eq!(x.extract(&k, &values(&["20260102", "5"])), None);
        assert_eq!(x.extract(&k, &values(&["2026-02-30", "5"])), None);
        assert_eq!(x.extract(&k, &[None, Some("5".into())]), None);
    }

    #[test]
    fn patterns_and_formatters_as_paimon_documents_them() {
        let k = keys(&["year", "month", "day", "hour"]);
        let x = TimeExtractor {
            pattern: Some("$year-$month-$day $hour:00:00".into()),
            formatter: None,
        };
        assert_eq!(
            x.extract(&k, &values(&["2026", "01", "02", "13"])),
            Some(at("2026-01-02 13:00:00"))
        );
        let x = TimeExtractor {
            pattern: None,
            formatter: Some(Formatter::parse("yyyyMMdd").unwrap()),
        };
        assert_eq!(
            x.extract(&keys(&["dt"]), &values(&["20260102"])),
            Some(at("2026-01-02 00:00:00"))
        );
        assert_eq!(x.extract(&keys(&["dt"]), &values(&["2026012"])), None);
        // `$dt` does not match inside `$dt1`; longer keys first.
        let x = TimeExtractor {
            pattern: Some("$dt1 $dt:00:00".into()),
            formatter: Some(Formatter::parse("yyyy-MM-dd HH:mm:ss").unwrap()),
        };
        assert_eq!(
            x.extract(&keys(&["dt", "dt1"]), &values(&["07", "2026-03-04"])),
            Some(at("2026-03-04 07:00:00"))
        );
        let x = TimeExtractor {
            pattern: None,
            formatter: Some(Formatter::parse("yyyy/M/d'T'H").unwrap()),
        };
        assert_eq!(
            x.extract(&keys(&["dt"]), &values(&["2026/3/14T9"])),
            Some(at("2026-03-14 09:00:00"))
        );
    }

    #[test]
    fn options_with_paimon_s_defaults_and_refusals() {
        let opts = |pairs: &[(&str, &str)]| {
            PartitionExpireOptions::from_options(
                &pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        assert_eq!(opts(&[(TIMESTAMP_FORMATTER, "yyyyMMdd")]), Ok(None));
        let o = opts(&[(EXPIRATION_TIME, "7 d")]).unwrap().unwrap();
        assert_eq!(o.expiration_time, Duration::from_secs(7 * 86_400));
        assert_eq!(o.check_interval, DEFAULT_CHECK_INTERVAL);
        assert_eq!(o.max_num, DEFAULT_MAX_NUM);
        assert!(opts(&[(EXPIRATION_TIME, "soon")]).is_err());
        assert!(opts(&[(EXPIRATION_STRATEGY, "update-time")]).is_err());
        assert!(opts(&[(EXPIRATION_STRATEGY, "values-time")]).is_ok());
        assert!(opts(&[(TIMESTAMP_FORMATTER, "yyyy-ww")]).is_err());
        assert!(opts(&[(TIMESTAMP_FORMATTER, "HH:mm")]).is_err());
        assert!(opts(&[(EXPIRATION_MAX_NUM, "0")]).is_err());
        assert!(PartitionExpireOptions::check(EXPIRATION_CHECK_INTERVAL, "10 min").is_ok());
    }
}
