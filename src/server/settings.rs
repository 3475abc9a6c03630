//! Session settings (GUCs): what `SET`, `SHOW`, `RESET` and `current_setting()` see.
//!
//! Each session has its own [`Settings`]; nothing here is global, so a `SET` in one connection is
//! never seen by another. Defaults come from one table, [`DEFS`]; values are validated on `SET`
//! and kept as the text `SHOW` prints.

use std::collections::BTreeMap;
use std::str::FromStr;

use datafusion::arrow::array::timezone::Tz;

use super::error::PgError;
use crate::query::{PG_VERSION, PG_VERSION_NUM};
use crate::sql::SetValue;

/// How a setting may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Any value (free text).
    Free,
    /// Validated and normalised by [`normalise`].
    Checked,
    /// Fixed by the server; `SET` is refused (55P02 / 0A000).
    ReadOnly,
}

/// One known setting.
struct Def {
    /// Name as PostgreSQL spells it (`TimeZone`); lookups ignore case.
    name: &'static str,
    default: &'static str,
    access: Access,
    /// Sent to the client as ParameterStatus at startup and when it changes.
    reported: bool,
    description: &'static str,
}

const fn def(
    name: &'static str,
    default: &'static str,
    access: Access,
    reported: bool,
    description: &'static str,
) -> Def {
    Def {
        name,
        default,
        access,
        reported,
        description,
    }
}

use Access::{Checked, Free, ReadOnly};

/// Every setting tarn knows, sorted by lower-case name.
const DEFS: &[Def] = &[
    def(
        "application_name",
        "",
        Free,
        true,
        "Sets the application name to be reported in statistics and logs.",
    ),
    def(
        "block_size",
        "8192",
        ReadOnly,
        false,
        "Shows the size of a disk block.",
    ),
    def(
        "bytea_output",
        "hex",
        Checked,
        false,
        "Sets the output format for bytea.",
    ),
    def(
        "client_encoding",
        "UTF8",
        Checked,
        true,
        "Sets the client's character set encoding.",
    ),
    def(
        "client_min_messages",
        "notice",
        Checked,
        false,
        "Sets the message levels that are sent to the client.",
    ),
    def(
        "DateStyle",
        "ISO, MDY",
        Checked,
        true,
        "Sets the display format for date and time values.",
    ),
    // Every tarn table is a Paimon table; PostgreSQL's name for its one access method is
    // what clients compare with (SQLAlchemy's table-options reflection, Alembic's autogenerate).
    def(
        "default_table_access_method",
        "heap",
        Checked,
        false,
        "Sets the default table access method for new tables.",
    ),
    def(
        "default_transaction_isolation",
        "read committed",
        Checked,
        false,
        "Sets the transaction isolation level of each new transaction.",
    ),
    def(
        "default_transaction_read_only",
        "off",
        Checked,
        true,
        "Sets the default read-only status of new transactions.",
    ),
    def(
        "extra_float_digits",
        "1",
        Checked,
        false,
        "Sets the number of digits displayed for floating-point values.",
    ),
    def(
        "idle_in_transaction_session_timeout",
        "0",
        Checked,
        false,
        "Sets the maximum allowed idle time between queries, when in a transaction.",
    ),
    def(
        "in_hot_standby",
        "off",
        ReadOnly,
        true,
        "Shows whether hot standby is currently active.",
    ),
    def(
        "integer_datetimes",
        "on",
        ReadOnly,
        true,
        "Shows whether datetimes are integer based.",
    ),
    def(
        "IntervalStyle",
        "postgres",
        Checked,
        true,
        "Sets the display format for interval values.",
    ),
    def(
        "is_superuser",
        "on",
        ReadOnly,
        true,
        "Shows whether the current user is a superuser.",
    ),
    def(
        "jit",
        "off",
        Checked,
        false,
        "Allow JIT compilation (tarn has none; asyncpg turns it off before introspection).",
    ),
    def(
        "lc_collate",
        "C",
        ReadOnly,
        false,
        "Shows the collation order locale.",
    ),
    def(
        "lc_ctype",
        "C",
        ReadOnly,
        false,
        "Shows the character classification and case conversion locale.",
    ),
    def(
        "lc_messages",
        "C",
        Free,
        false,
        "Sets the language in which messages are displayed.",
    ),
    def(
        "lc_monetary",
        "C",
        Free,
        false,
        "Sets the locale for formatting monetary amounts.",
    ),
    def(
        "lc_numeric",
        "C",
        Free,
        false,
        "Sets the locale for formatting numbers.",
    ),
    def(
        "lc_time",
        "C",
        Free,
        false,
        "Sets the locale for formatting date and time values.",
    ),
    def(
        "lock_timeout",
        "0",
        Checked,
        false,
        "Sets the maximum allowed duration of any wait for a lock.",
    ),
    def(
        "max_connections",
        "100",
        ReadOnly,
        false,
        "Sets the maximum number of concurrent connections.",
    ),
    def(
        "max_identifier_length",
        "63",
        ReadOnly,
        false,
        "Shows the maximum identifier length.",
    ),
    def(
        "password_encryption",
        "scram-sha-256",
        Free,
        false,
        "Chooses the algorithm for encrypting passwords.",
    ),
    def("row_security", "on", Checked, false, "Enable row security."),
    def(
        "search_path",
        "\"$user\", public",
        Checked,
        false,
        "Sets the schema search order for names that are not schema-qualified.",
    ),
    def(
        "server_encoding",
        "UTF8",
        ReadOnly,
        true,
        "Shows the server (database) character set encoding.",
    ),
    def(
        "server_version",
        PG_VERSION,
        ReadOnly,
        true,
        "Shows the server version.",
    ),
    def(
        "server_version_num",
        PG_VERSION_NUM,
        ReadOnly,
        false,
        "Shows the server version as an integer.",
    ),
    def(
        "standard_conforming_strings",
        "on",
        Checked,
        true,
        "Causes '...' strings to treat backslashes literally.",
    ),
    def(
        "statement_timeout",
        "0",
        Checked,
        false,
        "Sets the maximum allowed duration of any statement.",
    ),
    def(
        "tarn.flush_on_commit",
        "off",
        Checked,
        false,
        "COMMIT returns once the transaction is in a Paimon snapshot other engines read \
         (not only durable in tarn's commit log).",
    ),
    def(
        "TimeZone",
        "UTC",
        Checked,
        true,
        "Sets the time zone for displaying and interpreting time stamps.",
    ),
    def(
        "transaction_isolation",
        "read committed",
        Checked,
        false,
        "Sets the current transaction's isolation level.",
    ),
    def(
        "transaction_read_only",
        "off",
        Checked,
        false,
        "Sets the current transaction's read-only status.",
    ),
];

fn find(name: &str) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name.eq_ignore_ascii_case(name))
}

/// The settings of one session.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Values that differ from the defaults (or custom `x.y` settings), by lower-case name.
    values: BTreeMap<String, String>,
    /// Values given at startup: what `RESET` returns to.
    startup: BTreeMap<String, String>,
    /// The session user, shown as `session_authorization`.
    user: String,
    /// Bumped by every change: plans made under another generation are made again.
    generation: u64,
}

impl Settings {
    /// Settings for a new session. Startup parameters the client sent (`application_name`,
    /// `TimeZone`, `options=-c name=value`, ...) are applied; bad ones are refused like `SET`.
    pub fn new(user: &str, startup: &[(String, String)]) -> Result<Self, PgError> {
        let mut settings = Settings {
            values: BTreeMap::new(),
            startup: BTreeMap::new(),
            user: user.to_owned(),
            generation: 0,
        };
        for (name, value) in startup {
            if find(name).is_some_and(|d| d.access != ReadOnly) || name.contains('.') {
                settings.set(name, &SetValue::List(vec![value.clone()]))?;
            }
        }
        settings.startup = settings.values.clone();
        Ok(settings)
    }

    /// Changes so far: equal generations mean equal settings.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The current value of `name` (any case), `None` if unknown.
    pub fn get(&self, name: &str) -> Option<String> {
        let key = name.to_lowercase();
        if key == "session_authorization" {
            return Some(self.user.clone());
        }
        if let Some(v) = self.values.get(&key) {
            return Some(v.clone());
        }
        find(&key).map(|d| d.default.to_owned())
    }

    /// The display name of a setting (`timezone` -> `TimeZone`).
    pub fn display_name(name: &str) -> String {
        find(name).map_or_else(|| name.to_lowercase(), |d| d.name.to_owned())
    }

    /// Applies `SET name value`; returns the ParameterStatus to send, if the change is reported.
    pub fn set(
        &mut self,
        name: &str,
        value: &SetValue,
    ) -> Result<Option<(String, String)>, PgError> {
        self.generation += 1;
        let key = name.to_lowercase();
        let Some(d) = find(&key) else {
            if !key.contains('.') {
                return Err(PgError::undefined_setting(name));
            }
            // Custom `prefix.name` settings (used by applications) take any text.
            match value {
                SetValue::Default => self.values.remove(&key),
                SetValue::List(v) => self.values.insert(key, v.join(", ")),
            };
            return Ok(None);
        };
        let text = match value {
            SetValue::Default => None,
            SetValue::List(values) => {
                if d.access == ReadOnly {
                    return Err(PgError::new(
                        "55P02",
                        format!("parameter \"{}\" cannot be changed", d.name),
                    ));
                }
                if values.len() > 1 && key != "search_path" {
                    return Err(PgError::new(
                        "22023",
                        format!("SET {} takes only one argument", d.name),
                    ));
                }
                Some(match d.access {
                    Checked => normalise(&key, values)?,
                    _ => values.join(", "),
                })
            }
        };
        match text {
            Some(t) => self.values.insert(key.clone(), t),
            None => match self.startup.get(&key) {
                Some(t) => self.values.insert(key.clone(), t.clone()),
                None => self.values.remove(&key),
            },
        };
        Ok(d.reported
            .then(|| (d.name.to_owned(), self.get(&key).unwrap_or_default())))
    }

    /// A value the server decides (`max_connections`): shown by SHOW, kept by RESET.
    pub fn set_server_value(&mut self, name: &str, value: &str) {
        self.generation += 1;
        let key = name.to_lowercase();
        self.values.insert(key.clone(), value.to_owned());
        self.startup.insert(key, value.to_owned());
    }

    /// `RESET ALL`: back to the startup values. Returns the reported settings that changed.
    pub fn reset_all(&mut self) -> Vec<(String, String)> {
        self.generation += 1;
        let before = self.reported();
        self.values = self.startup.clone();
        let after = self.reported();
        after.into_iter().filter(|p| !before.contains(p)).collect()
    }

    /// The settings sent as ParameterStatus, with their current values.
    pub fn reported(&self) -> Vec<(String, String)> {
        let mut params: Vec<(String, String)> = DEFS
            .iter()
            .filter(|d| d.reported)
            .map(|d| (d.name.to_owned(), self.get(d.name).unwrap_or_default()))
            .collect();
        params.push(("session_authorization".to_owned(), self.user.clone()));
        params
    }

    /// Every setting for `SHOW ALL`: (name, value, description).
    pub fn all(&self) -> Vec<(String, String, String)> {
        DEFS.iter()
            .map(|d| {
                (
                    d.name.to_owned(),
                    self.get(d.name).unwrap_or_default(),
                    d.description.to_owned(),
                )
            })
            .collect()
    }

    /// The session time zone, as an Arrow time zone string.
    pub fn time_zone(&self) -> String {
        self.get("timezone").unwrap_or_else(|| "UTC".to_owned())
    }

    /// `statement_timeout` in milliseconds (0: none).
    pub fn statement_timeout_ms(&self) -> u64 {
        self.get("statement_timeout")
            .and_then(|v| parse_duration_ms(&v).ok())
            .unwrap_or(0)
    }

    /// `lock_timeout` in milliseconds (`None`: wait forever).
    pub fn lock_timeout_ms(&self) -> Option<u64> {
        self.get("lock_timeout")
            .and_then(|v| parse_duration_ms(&v).ok())
            .filter(|ms| *ms > 0)
    }

    /// The schemas named in `search_path`, in order (`"$user"` stands for the user name).
    /// `tarn.flush_on_commit`: COMMIT waits for the flush of what it wrote.
    pub fn flush_on_commit(&self) -> bool {
        self.get("tarn.flush_on_commit").as_deref() == Some("on")
    }

    pub fn search_path(&self) -> Vec<String> {
        let path = self.get("search_path").unwrap_or_default();
        split_search_path(&path)
            .into_iter()
            .map(|s| if s == "$user" { self.user.clone() } else { s })
            .collect()
    }
}

/// SERIALIZABLE is refused until tarn really provides it (never silently downgraded).
pub fn serializable_refused() -> PgError {
    PgError::new(
        "0A000",
        "SERIALIZABLE isolation is not supported: tarn runs every transaction under snapshot \
         isolation (REPEATABLE READ)",
    )
    .with_hint("Use BEGIN ISOLATION LEVEL REPEATABLE READ, or the default READ COMMITTED.")
}

fn invalid(name: &str, value: &str, hint: &str) -> PgError {
    PgError::new(
        "22023",
        format!(
            "invalid value for parameter \"{}\": \"{value}\"",
            Settings::display_name(name)
        ),
    )
    .with_hint(hint)
}

/// Validates and normalises a checked setting's value.
fn normalise(key: &str, values: &[String]) -> Result<String, PgError> {
    let value = values.first().map(String::as_str).unwrap_or_default();
    let lower = value.to_lowercase();
    match key {
        "timezone" => normalise_time_zone(value).ok_or_else(|| {
            invalid(key, value, "Use a time zone name such as 'UTC' or 'Europe/Berlin', or an offset such as '+02:00'.")
        }),
        "search_path" => Ok(values
            .iter()
            .flat_map(|v| split_search_path(v))
            .map(|s| quote_schema(&s))
            .collect::<Vec<_>>()
            .join(", ")),
        // PostgreSQL compares encoding names with everything but letters and digits removed
        // (asyncpg sends `'utf-8'`, quotes included).
        "client_encoding" => match lower
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .as_str()
        {
            "utf8" | "unicode" => Ok("UTF8".to_owned()),
            _ => Err(PgError::new(
                "0A000",
                format!("client encoding \"{value}\" is not supported"),
            )
            .with_hint("tarn speaks UTF8 only.")),
        },
        "datestyle" => {
            if lower.split([',', ' ']).any(|p| p == "iso") || lower.is_empty() {
                let order = if lower.contains("dmy") {
                    "DMY"
                } else if lower.contains("ymd") {
                    "YMD"
                } else {
                    "MDY"
                };
                Ok(format!("ISO, {order}"))
            } else {
                Err(PgError::new("0A000", format!("DateStyle \"{value}\" is not supported"))
                    .with_hint("tarn writes dates in ISO style only; use SET DateStyle = 'ISO'."))
            }
        }
        "intervalstyle" if lower == "postgres" => Ok(lower),
        "intervalstyle" => Err(PgError::new(
            "0A000",
            format!("IntervalStyle \"{value}\" is not supported"),
        )
        .with_hint("tarn writes intervals in the postgres style only.")),
        "bytea_output" if lower == "hex" => Ok(lower),
        "bytea_output" => Err(invalid(key, value, "tarn writes bytea in hex only.")),
        "standard_conforming_strings" if is_on(&lower) => Ok("on".to_owned()),
        "standard_conforming_strings" => Err(PgError::new(
            "0A000",
            "standard_conforming_strings cannot be turned off in tarn",
        )),
        "client_min_messages" => match lower.as_str() {
            "debug5" | "debug4" | "debug3" | "debug2" | "debug1" | "debug" | "log" | "notice"
            | "warning" | "error" => Ok(lower),
            _ => Err(invalid(key, value, "Use one of debug5..debug1, log, notice, warning, error.")),
        },
        "extra_float_digits" => match value.parse::<i32>() {
            Ok(n) if (-15..=3).contains(&n) => Ok(n.to_string()),
            _ => Err(invalid(key, value, "Use an integer from -15 to 3.")),
        },
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
            parse_duration_ms(value)
                .map(format_duration_ms)
                .map_err(|()| invalid(key, value, "Use milliseconds, or a number with a unit: '5s', '2min'."))
        }
        "default_table_access_method" => match lower.as_str() {
            "heap" => Ok(lower),
            _ => Err(PgError::new(
                "22023",
                format!("invalid value for parameter \"{key}\": \"{value}\""),
            )
            .with_detail(format!("Table access method \"{value}\" does not exist."))),
        },
        "default_transaction_isolation" | "transaction_isolation" => match lower.as_str() {
            "read uncommitted" | "read committed" | "repeatable read" => Ok(lower),
            "serializable" => Err(serializable_refused()),
            _ => Err(invalid(key, value, "Use read committed or repeatable read.")),
        },
        "default_transaction_read_only"
        | "transaction_read_only"
        | "jit"
        | "row_security"
        | "tarn.flush_on_commit" => {
            if is_on(&lower) {
                Ok("on".to_owned())
            } else if is_off(&lower) {
                Ok("off".to_owned())
            } else {
                Err(invalid(key, value, "Use on or off."))
            }
        }
        _ => Ok(value.to_owned()),
    }
}

fn is_on(v: &str) -> bool {
    matches!(v, "on" | "true" | "yes" | "1" | "t")
}

fn is_off(v: &str) -> bool {
    matches!(v, "off" | "false" | "no" | "0" | "f")
}

/// PostgreSQL accepts zone names in any case; Arrow (chrono-tz) wants the canonical spelling.
fn normalise_time_zone(value: &str) -> Option<String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return None;
    }
    // A bare number is an offset in hours (SET TIME ZONE -7), as in PostgreSQL.
    if let Ok(hours) = trimmed.parse::<i32>() {
        if !(-15..=15).contains(&hours) {
            return None;
        }
        let sign = if hours < 0 { '-' } else { '+' };
        return Some(format!("{sign}{:02}:00", hours.abs()));
    }
    let candidates = [
        trimmed.to_owned(),
        trimmed.to_uppercase(),
        // "europe/berlin" -> "Europe/Berlin"
        trimmed
            .split('/')
            .map(|part| {
                part.split('_')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next().map_or(String::new(), |f| {
                            f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase()
                        })
                    })
                    .collect::<Vec<_>>()
                    .join("_")
            })
            .collect::<Vec<_>>()
            .join("/"),
    ];
    candidates.into_iter().find(|c| Tz::from_str(c).is_ok())
}

/// Splits `"$user", public, "My Schema"` into its names, unquoting.
fn split_search_path(path: &str) -> Vec<String> {
    path.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map_or_else(|| s.to_owned(), |inner| inner.replace("\"\"", "\""))
        })
        .collect()
}

/// Quotes a schema name for display when PostgreSQL would.
fn quote_schema(name: &str) -> String {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain && !name.is_empty() {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Parses `100`, `100ms`, `5s`, `2min`, `1h`, `1d` into milliseconds.
fn parse_duration_ms(value: &str) -> Result<u64, ()> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: u64 = number.parse().map_err(|_| ())?;
    let factor = match unit.trim() {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(()),
    };
    n.checked_mul(factor).ok_or(())
}

/// Formats milliseconds the way PostgreSQL's SHOW does (largest exact unit).
fn format_duration_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".to_owned();
    }
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1_000),
    ] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &mut Settings, name: &str, value: &str) -> Result<Option<(String, String)>, PgError> {
        s.set(name, &SetValue::List(vec![value.to_owned()]))
    }

    #[test]
    fn defs_are_sorted_and_unique() {
        let names: Vec<String> = DEFS.iter().map(|d| d.name.to_lowercase()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn set_show_reset() {
        let mut s = Settings::new("ann", &[("application_name".into(), "psql".into())]).unwrap();
        assert_eq!(s.get("application_name").unwrap(), "psql");
        let reported = set(&mut s, "TIMEZONE", "europe/berlin").unwrap();
        assert_eq!(reported, Some(("TimeZone".into(), "Europe/Berlin".into())));
        assert_eq!(s.time_zone(), "Europe/Berlin");
        set(&mut s, "application_name", "other").unwrap();
        s.set("timezone", &SetValue::Default).unwrap();
        assert_eq!(s.get("TimeZone").unwrap(), "UTC");
        let changed = s.reset_all();
        assert_eq!(s.get("application_name").unwrap(), "psql");
        assert!(changed.contains(&("application_name".into(), "psql".into())));
    }

    #[test]
    fn validation() {
        let mut s = Settings::new("ann", &[]).unwrap();
        assert_eq!(
            set(&mut s, "timezone", "Mars/Olympus").unwrap_err().code,
            "22023"
        );
        assert_eq!(
            set(&mut s, "extra_float_digits", "9").unwrap_err().code,
            "22023"
        );
        assert_eq!(
            set(&mut s, "server_version", "1").unwrap_err().code,
            "55P02"
        );
        assert_eq!(
            set(&mut s, "no_such_setting", "1").unwrap_err().code,
            "42704"
        );
        for spelling in ["utf8", "UTF-8", "'utf-8'", "Unicode", "utf_8"] {
            set(&mut s, "client_encoding", spelling).unwrap();
            assert_eq!(s.get("client_encoding").unwrap(), "UTF8");
        }
        assert_eq!(
            set(&mut s, "client_encoding", "latin1").unwrap_err().code,
            "0A000"
        );
        set(&mut s, "myapp.tenant", "42").unwrap();
        assert_eq!(s.get("myapp.tenant").unwrap(), "42");
        set(&mut s, "statement_timeout", "5000").unwrap();
        assert_eq!(s.get("statement_timeout").unwrap(), "5s");
        assert_eq!(s.statement_timeout_ms(), 5000);
        set(&mut s, "timezone", "-7").unwrap();
        assert_eq!(s.time_zone(), "-07:00");
        s.set(
            "search_path",
            &SetValue::List(vec!["sales".into(), "My Schema".into()]),
        )
        .unwrap();
        assert_eq!(s.get("search_path").unwrap(), "sales, \"My Schema\"");
        assert_eq!(s.search_path(), ["sales", "My Schema"]);
    }

    #[test]
    fn default_search_path_names_user_then_public() {
        let s = Settings::new("ann", &[]).unwrap();
        assert_eq!(s.search_path(), ["ann", "public"]);
    }
}
