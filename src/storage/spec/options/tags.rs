//! The automatic-tag options of a table (`tag.*`, Paimon's `TagCreationMode`,
//! `TagCreationPeriod`, `TagPeriodFormatter` and their companions) with Paimon's defaults,
//! parsed and checked. What they make happen — which tags to create and expire, and their
//! names — is `maintenance/auto_tag.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::storage::spec::options::{self, parse_duration};
use crate::storage::spec::schema::TableSchema;

/// `tag.automatic-creation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreationMode {
    None,
    ProcessTime,
    Watermark,
    Batch,
}

/// `tag.creation-period`, or `tag.creation-period-duration` (`Every`, in milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Daily,
    Hourly,
    TwoHours,
    Every(i64),
}

impl Period {
    pub fn millis(self) -> i64 {
        const HOUR: i64 = 3_600_000;
        match self {
            Period::Daily => 24 * HOUR,
            Period::Hourly => HOUR,
            Period::TwoHours => 2 * HOUR,
            Period::Every(ms) => ms,
        }
    }
}

/// `tag.period-formatter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodFormatter {
    WithDashes,
    WithoutDashes,
    WithoutDashesAndSpaces,
}

/// The automatic-tag options of a table, with Paimon's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoTagOptions {
    pub mode: CreationMode,
    pub period: Period,
    pub formatter: PeriodFormatter,
    pub delay: Duration,
    pub num_retained_max: Option<usize>,
    pub default_time_retained: Option<Duration>,
    pub time_expire_enabled: bool,
    pub automatic_completion: bool,
    pub batch_customized_name: Option<String>,
}

impl Default for AutoTagOptions {
    fn default() -> Self {
        Self {
            mode: CreationMode::None,
            period: Period::Daily,
            formatter: PeriodFormatter::WithDashes,
            delay: Duration::ZERO,
            num_retained_max: None,
            default_time_retained: None,
            time_expire_enabled: true,
            automatic_completion: false,
            batch_customized_name: None,
        }
    }
}

impl AutoTagOptions {
    /// The options of `schema`, or why one of them is invalid.
    pub fn from_schema(schema: &TableSchema) -> Result<Self, String> {
        Self::from_options(&schema.options)
    }

    /// The options among `options` (a table's), or why one of them is invalid.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<Self, String> {
        let mut out = Self::default();
        let get = |key: &str| options.get(key).map(|v| v.trim());
        let invalid = |key: &str, value: &str, expected: &str| {
            format!("invalid value '{value}' for table option '{key}': expected {expected}")
        };
        let choice = |key: &str, choices: &[&str]| -> Result<Option<usize>, String> {
            let Some(value) = get(key) else {
                return Ok(None);
            };
            match choices.iter().position(|c| c.eq_ignore_ascii_case(value)) {
                Some(i) => Ok(Some(i)),
                None => Err(invalid(
                    key,
                    value,
                    &format!("one of {}", choices.join(", ")),
                )),
            }
        };
        let duration = |key: &str| -> Result<Option<Duration>, String> {
            get(key)
                .map(|v| parse_duration(v).map_err(|e| invalid(key, v, &e)))
                .transpose()
        };
        let boolean = |key: &str| -> Result<Option<bool>, String> {
            get(key)
                .map(|v| match v.to_lowercase().as_str() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    _ => Err(invalid(key, v, "true or false")),
                })
                .transpose()
        };
        if let Some(i) = choice(
            options::TAG_AUTOMATIC_CREATION,
            &["none", "process-time", "watermark", "batch"],
        )? {
            out.mode = [
                CreationMode::None,
                CreationMode::ProcessTime,
                CreationMode::Watermark,
                CreationMode::Batch,
            ][i];
        }
        if let Some(i) = choice(
            options::TAG_CREATION_PERIOD,
            &["daily", "hourly", "two-hours"],
        )? {
            out.period = [Period::Daily, Period::Hourly, Period::TwoHours][i];
        }
        if let Some(d) = duration(options::TAG_CREATION_PERIOD_DURATION)? {
            let key = options::TAG_CREATION_PERIOD_DURATION;
            match i64::try_from(d.as_millis()) {
                Ok(ms) if ms > 0 => out.period = Period::Every(ms),
                _ => {
                    return Err(invalid(
                        key,
                        get(key).unwrap_or_default(),
                        "a duration of at least 1 ms",
                    ));
                }
            }
        }
        if let Some(i) = choice(
            options::TAG_PERIOD_FORMATTER,
            &["with_dashes", "without_dashes", "without_dashes_and_spaces"],
        )? {
            out.formatter = [
                PeriodFormatter::WithDashes,
                PeriodFormatter::WithoutDashes,
                PeriodFormatter::WithoutDashesAndSpaces,
            ][i];
        }
        if let Some(d) = duration(options::TAG_CREATION_DELAY)? {
            out.delay = d;
        }
        if out.delay.as_millis() >= out.period.millis() as u128 {
            return Err(format!(
                "table option '{}' ({} ms) must be shorter than the tag creation period ({} ms)",
                options::TAG_CREATION_DELAY,
                out.delay.as_millis(),
                out.period.millis()
            ));
        }
        if let Some(v) = get(options::TAG_NUM_RETAINED_MAX) {
            out.num_retained_max = Some(v.parse().map_err(|_| {
                invalid(options::TAG_NUM_RETAINED_MAX, v, "a non-negative integer")
            })?);
        }
        out.default_time_retained = duration(options::TAG_DEFAULT_TIME_RETAINED)?;
        if let Some(b) = boolean(options::TAG_TIME_EXPIRE_ENABLED)? {
            out.time_expire_enabled = b;
        }
        if let Some(b) = boolean(options::TAG_AUTOMATIC_COMPLETION)? {
            out.automatic_completion = b;
        }
        out.batch_customized_name = get(options::TAG_BATCH_CUSTOMIZED_NAME)
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        Ok(out)
    }

    /// Whether commits create tags (`process-time`, `batch`; `watermark` is treated as `none`).
    pub fn creates_tags(&self) -> bool {
        matches!(self.mode, CreationMode::ProcessTime | CreationMode::Batch)
    }

    /// Whether anything happens after a commit: tags created, or tags given a retention that
    /// must be expired.
    pub fn is_active(&self) -> bool {
        self.creates_tags() || (self.time_expire_enabled && self.default_time_retained.is_some())
    }
}
