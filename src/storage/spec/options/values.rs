//! The value grammars of table options: sizes and durations as Paimon reads them.
//!
//! Two size grammars are kept apart on purpose: [`parse_memory_size`] is Paimon's
//! `MemorySize.parse` (what the compaction options follow to the letter), [`parse_size`] the
//! more lenient one tarn has always read `write-buffer-size`, `manifest.target-file-size` and
//! `file-index.in-manifest-threshold` with (blanks anywhere, `kib`/`mib`/`gib`).

use std::time::Duration;

/// Parses Paimon memory sizes: `256 mb`, `64MB`, `1gb`, `1048576`.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim().to_lowercase().replace(' ', "");
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().ok()?;
    let mult = match unit {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Parses a size as Paimon's `MemorySize.parse`: digits, optional blanks, then an optional unit
/// (`b`/`bytes`, `k`/`kb`/`kibibytes`, `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`,
/// `t`/`tb`/`tebibytes`, any case; all powers of 1024). No unit means bytes.
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a size such as '128 mb'".to_owned());
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err("a size that starts with a number, such as '128 mb'".to_owned());
    }
    let value: i64 = number
        .parse()
        .map_err(|_| "a size that fits in 64 bits".to_owned())?;
    let multiplier: i64 = match unit.trim().to_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return Err("a size with a unit of b, kb, mb, gb or tb (e.g. '128 mb')".to_owned()),
    };
    value
        .checked_mul(multiplier)
        .map(|n| n as u64)
        .ok_or_else(|| "a size that fits in 64 bits".to_owned())
}

/// Parses a duration as Paimon's `TimeUtils.parseDuration`: digits, then an optional unit
/// (`d`/`day(s)`, `h`/`hour(s)`, `m`/`min`/`minute(s)`, `s`/`sec(s)`/`second(s)`,
/// `ms`/`milli(s)`/`millisecond(s)`, `µs`/`micro(s)`/`microsecond(s)`,
/// `ns`/`nano(s)`/`nanosecond(s)`); no unit means milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err("a duration such as '10 min' or '1 d'".to_owned());
    }
    let n: u64 = number
        .parse()
        .map_err(|_| "a duration that fits in 64 bits".to_owned())?;
    let nanos_per: u64 = match unit.trim().to_lowercase().as_str() {
        "d" | "day" | "days" => 86_400_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "µs" | "us" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        _ => {
            return Err(
                "a duration with a unit of d, h, min, s, ms, µs or ns (e.g. '10 min')".to_owned(),
            );
        }
    };
    n.checked_mul(nanos_per)
        .map(Duration::from_nanos)
        .ok_or_else(|| "a shorter duration".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("256 mb"), Some(256 << 20));
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("x"), None);
    }
}
