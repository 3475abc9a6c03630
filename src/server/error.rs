//! [`PgError`]: an error as the client sees it, with its SQLSTATE. Every lower layer's error
//! is mapped here, in one place.

use datafusion::arrow::error::ArrowError;
use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use pgwire::error::{ErrorInfo, PgWireError};

use crate::query::QueryError;
use crate::sql::SqlError;
use crate::storage::StorageError;

/// Separates a NOTICE's message from its DETAIL in a session's notices
/// (`drop cascades to 2 other objects` + the list); the handler sends them as the two fields.
pub const NOTICE_DETAIL: char = '\u{1e}';

/// An error for the client: SQLSTATE, message, optional hint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PgError {
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// CONTEXT: where the error happened (`COPY t, line 2, column born: "x"`).
    pub context: Option<String>,
}

impl PgError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            detail: None,
            hint: None,
            context: None,
        }
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn undefined_setting(name: &str) -> Self {
        Self::new(
            "42704",
            format!("unrecognized configuration parameter \"{name}\""),
        )
    }

    pub fn canceled_by_user() -> Self {
        Self::new("57014", "canceling statement due to user request")
    }

    pub fn canceled_by_timeout() -> Self {
        Self::new("57014", "canceling statement due to statement timeout")
    }

    pub fn aborted_transaction() -> Self {
        Self::new(
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction block",
        )
        .with_hint("Send ROLLBACK (or COMMIT, which rolls back) to end the failed transaction.")
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new("XX000", format!("internal error: {message}")).with_hint(
            "This is a bug in tarn; the server keeps running. Please report it with the statement.",
        )
    }
}

impl From<PgError> for ErrorInfo {
    fn from(e: PgError) -> Self {
        let mut info = ErrorInfo::new("ERROR".to_owned(), e.code.to_owned(), e.message);
        info.hint = e.hint;
        info.detail = e.detail;
        info.where_context = e.context;
        info
    }
}

impl From<PgError> for PgWireError {
    fn from(e: PgError) -> Self {
        PgWireError::UserError(Box::new(e.into()))
    }
}

impl From<SqlError> for PgError {
    fn from(e: SqlError) -> Self {
        PgError::new(e.sqlstate(), e.to_string())
    }
}

impl From<crate::storage::sequences::SequenceError> for PgError {
    fn from(e: crate::storage::sequences::SequenceError) -> Self {
        use crate::storage::sequences::SequenceError;
        match e {
            SequenceError::Storage(e) => PgError::from(&e),
            other => PgError::new(other.sqlstate(), other.to_string()),
        }
    }
}

impl From<crate::storage::views::ViewError> for PgError {
    fn from(e: crate::storage::views::ViewError) -> Self {
        use crate::storage::views::ViewError;
        match e {
            ViewError::Storage(e) => PgError::from(&e),
            other => PgError::new(other.sqlstate(), other.to_string()),
        }
    }
}

impl From<StorageError> for PgError {
    fn from(e: StorageError) -> Self {
        PgError::from(&e)
    }
}

impl From<&StorageError> for PgError {
    fn from(e: &StorageError) -> Self {
        use crate::storage::spec::schema_change::SchemaChangeError;
        use crate::storage::{CommitError, VersionError};
        let code = match e {
            StorageError::ObjectStore(_) | StorageError::Io { .. } => "58030",
            StorageError::MissingFile { .. } => "58P01",
            StorageError::InvalidLocation { .. } => "22023",
            StorageError::DatabaseNotFound(_) => "3F000",
            StorageError::DatabaseExists(_) => "42P06",
            StorageError::DatabaseNotEmpty(_) => "2BP01",
            StorageError::TableNotFound(_) => "42P01",
            StorageError::TableExists(_) => "42P07",
            StorageError::Format(_) | StorageError::Parquet(_) | StorageError::Avro(_) => "XX001",
            StorageError::UnsupportedType(_)
            | StorageError::Unsupported(_)
            | StorageError::ReadOnly { .. } => "0A000",
            StorageError::InvalidSchema(_) => "42P16",
            StorageError::SchemaChange(c) => match c {
                SchemaChangeError::UndefinedColumn(_) => "42703",
                SchemaChangeError::DuplicateColumn(_) => "42701",
                SchemaChangeError::Unsupported(_) => "0A000",
                SchemaChangeError::Invalid(_) => "22023",
            },
            StorageError::Arrow(_) => "XX000",
            StorageError::NotNull { .. } => "23502",
            StorageError::ValueTooLong { .. } => "22001",
            StorageError::DuplicateKey { .. } => "23505",
            StorageError::CommitConflict(_) => "40001",
            StorageError::Version(v) => match v {
                VersionError::SnapshotNotFound { .. } | VersionError::TagNotFound { .. } => "42704",
                VersionError::NoSnapshotAtTime { .. } | VersionError::Backwards { .. } => "22023",
                VersionError::TagExists { .. } => "42710",
                VersionError::InvalidTagName { .. } => "42602",
                VersionError::Expired { .. } | VersionError::KeptExpiring { .. } => "40001",
            },
            StorageError::Commit(CommitError::Group(round)) => {
                // Every transaction of a failed round sees the round's error as its own
                // kind, and where it happened.
                return PgError::from(round.as_ref()).with_context(
                    "group commit: this transaction was to be committed in one snapshot with \
                     others, and that commit failed; none of them committed",
                );
            }
            StorageError::Commit(CommitError::Unanswered) => {
                return PgError::new("08007", e.to_string()).with_hint(
                    "The transaction may or may not have committed: check the table for its \
                     changes before running it again.",
                );
            }
            StorageError::Internal(message) => return PgError::internal(message),
        };
        let err = PgError::new(code, e.to_string());
        match e {
            StorageError::DatabaseNotEmpty(_) => {
                err.with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
            }
            StorageError::DuplicateKey { detail, .. } => err.with_detail(detail.clone()),
            StorageError::CommitConflict(_) => {
                err.with_hint("Another writer changed the same data first; retry the transaction.")
            }
            StorageError::Version(
                VersionError::Expired { .. } | VersionError::KeptExpiring { .. },
            ) => err.with_hint(
                "Snapshot expiry removed that version while it was read; run the statement \
                     again. A tag (CALL sys.create_tag) keeps a version from expiring.",
            ),
            StorageError::MissingFile { .. } => err
                .with_detail(
                    "The table's metadata names this file, but it is not in the warehouse: it \
                     was deleted or moved by hand or by another tool.",
                )
                .with_hint(
                    "Restore the file from a backup, or go back to a snapshot that does not use \
                     it: read one with VERSION AS OF, then CALL sys.restore or sys.rollback_to.",
                ),
            StorageError::ObjectStore(_) | StorageError::Io { .. } => err.with_hint(
                "The warehouse's storage failed (see the message); check it, then run the \
                 statement again.",
            ),
            StorageError::Format(_) | StorageError::Parquet(_) | StorageError::Avro(_) => err
                .with_hint(
                    "A file of the table could not be read; check the warehouse for damage.",
                ),
            _ => err,
        }
    }
}

impl From<QueryError> for PgError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::DataFusion(e) => e.into(),
            other => PgError::from(&other),
        }
    }
}

impl From<&QueryError> for PgError {
    fn from(e: &QueryError) -> Self {
        match e {
            QueryError::DataFusion(e) => from_datafusion(e),
            QueryError::Storage(e) => e.into(),
            QueryError::InvalidText { .. } => PgError::new("22P02", e.to_string()),
            QueryError::DateTime { code, message } => PgError::new(code, message.clone()),
            QueryError::Sql { code, message } => PgError::new(code, message.clone()),
            QueryError::Arrow(e) => from_arrow(e),
            QueryError::Unsupported(m) => PgError::new("0A000", m.clone()),
            QueryError::Coded { code, message } => PgError::new(code, message.clone()),
            QueryError::Cardinality(m) => PgError::new("21000", m.clone())
                .with_hint("Ensure that not more than one source row matches any one target row."),
        }
    }
}

impl From<DataFusionError> for PgError {
    fn from(e: DataFusionError) -> Self {
        from_datafusion(&e)
    }
}

fn from_datafusion(e: &DataFusionError) -> PgError {
    match e {
        DataFusionError::Context(_, inner) => from_datafusion(inner),
        DataFusionError::Shared(inner) => from_datafusion(inner),
        DataFusionError::Diagnostic(_, inner) => from_datafusion(inner),
        DataFusionError::Collection(errors) if !errors.is_empty() => from_datafusion(&errors[0]),
        DataFusionError::External(inner) => {
            if let Some(pg) = inner.downcast_ref::<PgError>() {
                pg.clone()
            } else if let Some(e) = inner.downcast_ref::<StorageError>() {
                e.into()
            } else if let Some(e) = inner.downcast_ref::<QueryError>() {
                e.into()
            } else if let Some(df) = inner.downcast_ref::<DataFusionError>() {
                from_datafusion(df)
            } else if let Some(e) = inner.downcast_ref::<regex::Error>() {
                PgError::new("2201B", format!("invalid regular expression: {e}"))
            } else if let Some(e) = inner.downcast_ref::<regex_syntax::Error>() {
                // DataFusion's simplifier parses constant patterns of `~` ahead of running.
                PgError::new("2201B", format!("invalid regular expression: {e}"))
            } else {
                PgError::internal(inner)
            }
        }
        DataFusionError::SQL(e, _) => PgError::new("42601", format!("syntax error: {e}")),
        // A window function where none may be (WHERE, JOIN ON, GROUP BY) survives planning and
        // is refused by the physical planner.
        DataFusionError::NotImplemented(msg)
            if msg.contains("does not support logical expression WindowFunction") =>
        {
            PgError::new(
                "42P20",
                "window functions are not allowed here (only in the select list and ORDER BY)",
            )
        }
        DataFusionError::NotImplemented(msg) => {
            PgError::new("0A000", format!("not supported: {msg}"))
        }
        DataFusionError::SchemaError(e, _) => from_schema_error(e),
        DataFusionError::Plan(msg) => from_plan_message(msg),
        DataFusionError::ArrowError(e, _) => from_arrow(e),
        DataFusionError::Execution(msg) => from_execution_message(msg),
        DataFusionError::ResourcesExhausted(msg) => {
            PgError::new("53200", format!("out of memory: {msg}"))
                .with_hint("The query needs more memory than tarn may use; narrow it or add LIMIT.")
        }
        DataFusionError::Configuration(msg) => PgError::new("22023", msg.clone()),
        DataFusionError::IoError(e) => PgError::new("58030", format!("I/O error: {e}")),
        DataFusionError::ObjectStore(e) => from_object_store(e),
        DataFusionError::ParquetError(e) => match e.as_ref() {
            // The reader's I/O failed under Parquet: that failure, not a damaged file.
            parquet::errors::ParquetError::External(inner)
                if let Some(e) = inner.downcast_ref::<object_store::Error>() =>
            {
                from_object_store(e)
            }
            _ => PgError::new("XX001", format!("data file error: {e}")),
        },
        other => PgError::internal(other.message()),
    }
}

/// An object store's failure: a missing object is a missing file (58P01), anything else an
/// I/O failure (58030).
fn from_object_store(e: &object_store::Error) -> PgError {
    match e {
        object_store::Error::NotFound { path, .. } => {
            PgError::from(&StorageError::MissingFile { path: path.clone() })
        }
        _ => PgError::new("58030", format!("storage error: {e}")),
    }
}

fn from_schema_error(e: &SchemaError) -> PgError {
    match e {
        SchemaError::FieldNotFound { field, .. } => PgError::new(
            "42703",
            format!("column \"{}\" does not exist", field.name()),
        ),
        SchemaError::AmbiguousReference { field } => PgError::new(
            "42702",
            format!("column reference \"{}\" is ambiguous", field.name()),
        ),
        // Two fields of one relation name: the name was given twice (`FROM t, t`).
        SchemaError::DuplicateQualifiedField { qualifier, .. } => PgError::new(
            "42712",
            format!(
                "table name \"{}\" specified more than once",
                qualifier.table()
            ),
        ),
        SchemaError::DuplicateUnqualifiedField { name } => PgError::new(
            "42701",
            format!("column \"{name}\" specified more than once"),
        ),
    }
}

/// DataFusion's planning errors with PostgreSQL's SQLSTATE for each. DataFusion raises them all
/// as `Plan` errors told apart only by their text (`plan_err!`), so each is recognized by the
/// fixed words of its message.
const PLANNING_ERRORS: &[(&[&str], &str)] = &[
    // grouping_error: `select name, count(*) from t`, also in HAVING / ORDER BY / DISTINCT ON.
    (
        &[
            "Column in ",
            " must be in GROUP BY or an aggregate function",
        ],
        "42803",
    ),
    (
        &["Aggregate functions are not allowed in the WHERE clause"],
        "42803",
    ),
    // invalid_column_reference: ORDER BY position, DISTINCT ON against ORDER BY.
    (&["Order by column out of bounds"], "42P10"),
    (
        &["SELECT DISTINCT ON expressions must match initial ORDER BY"],
        "42P10",
    ),
    (
        &[
            "For SELECT DISTINCT, ORDER BY expressions",
            "must appear in select list",
        ],
        "42P10",
    ),
    (&["LIMIT must be >= 0"], "2201W"),
    (&["OFFSET must be >=0"], "2201X"),
    // syntax_error: PostgreSQL's "subquery has too many columns", "each UNION query must
    // have the same number of columns".
    (
        &["Too many columns! The subquery should only return one column"],
        "42601",
    ),
    (&[" queries have different number of columns"], "42601"),
    // datatype_mismatch: `WHERE numeric_column`.
    (
        &["Cannot create filter with non-boolean predicate"],
        "42804",
    ),
    // undefined_function: PostgreSQL's "operator does not exist: date + date".
    (&["Cannot coerce arithmetic expression"], "42883"),
    // windowing_error: a frame starting after its end.
    (&["Invalid window frame"], "42P20"),
    // numeric_value_out_of_range: `percentile_cont(1.5)`.
    (&["Percentile value must be between 0.0 and 1.0"], "22003"),
];
/// DataFusion's and Arrow's regular-expression failures in PostgreSQL's codes.
fn regex_error(msg: &str) -> Option<PgError> {
    if msg.contains("Regular expression did not compile") {
        let detail = msg.rsplit("did not compile: ").next().unwrap_or(msg);
        return Some(PgError::new(
            "2201B",
            format!("invalid regular expression: {detail}"),
        ));
    }
    if msg.contains("does not support the \"global\" option") {
        return Some(PgError::new("22023", msg.to_owned()));
    }
    None
}

/// DataFusion's failures of string and date/time functions whose PostgreSQL counterparts
/// raise a data exception: 22023 invalid parameter value (an unknown date_trunc/extract unit,
/// a field position of 0), 22008 for a date that does not exist.
fn function_error(msg: &str) -> Option<PgError> {
    let invalid_parameter = msg.starts_with("Unsupported date_trunc granularity")
        || (msg.starts_with("Date part '") && msg.ends_with("not supported"))
        || msg.contains("field position must not be zero")
        || msg.contains("invalid Unicode scalar value");
    if invalid_parameter {
        return Some(PgError::new("22023", msg.to_owned()));
    }
    // make_date: "Month value '13' is out of range", "Unable to parse date from 2024, 2, 30"
    let bad_date = (msg.ends_with("' is out of range") && msg.contains(" value '"))
        || msg.starts_with("Unable to parse date from");
    if bad_date {
        return Some(PgError::new("22008", "date field value out of range"));
    }
    None
}

fn from_plan_message(msg: &str) -> PgError {
    if let Some(e) = regex_error(msg).or_else(|| function_error(msg)) {
        return e;
    }
    // "Inconsistent data length across values list: got 3 values in row 0 but expected 4"
    if let Some(rest) = msg.strip_prefix("Inconsistent data length across values list: got ")
        && let Some((got, expected)) = rest.split_once(" values in row ")
        && let Some(expected) = expected.rsplit(' ').next()
        && let (Ok(got), Ok(expected)) = (got.parse::<usize>(), expected.parse::<usize>())
    {
        return PgError::new(
            "42601",
            if got > expected {
                "INSERT has more expressions than target columns"
            } else {
                "INSERT has more target columns than expressions"
            },
        );
    }
    // DataFusion: "table 'db.public.t' not found"
    if let Some(rest) = msg.strip_prefix("table '")
        && let Some(name) = rest.strip_suffix("' not found")
    {
        let short = name.rsplit('.').next().unwrap_or(name);
        return PgError::new("42P01", format!("relation \"{short}\" does not exist")).with_hint(
            "Check the name and the search_path; quote names that have upper-case letters.",
        );
    }
    if let Some((_, code)) = PLANNING_ERRORS
        .iter()
        .find(|(words, _)| words.iter().all(|w| msg.contains(w)))
    {
        return PgError::new(code, msg.to_owned());
    }
    if msg.contains("Invalid function") || msg.starts_with("Unknown function") {
        return PgError::new("42883", msg.to_owned());
    }
    if msg.contains("No function matches")
        || msg.contains("Cannot infer common")
        || msg.contains("does not support")
    {
        return PgError::new("42883", msg.to_owned());
    }
    if msg.contains("Unsupported")
        || msg.contains("not supported")
        || msg.contains("Unsupported SQL")
    {
        return PgError::new("0A000", msg.to_owned());
    }
    PgError::new("42000", msg.to_owned())
}

fn from_execution_message(msg: &str) -> PgError {
    if let Some(e) = regex_error(msg).or_else(|| function_error(msg)) {
        return e;
    }
    let lower = msg.to_lowercase();
    if msg.contains("to store in a Decimal") {
        return PgError::new("22003", "numeric field overflow").with_detail(msg.to_owned());
    }
    if msg.starts_with("NTILE requires a positive integer") {
        // DataFusion's ntile(0) / ntile(-1).
        return PgError::new("22014", "argument of ntile must be greater than zero");
    }
    if lower.contains("divide by zero") || lower.contains("division by zero") {
        PgError::new("22012", "division by zero")
    } else if lower.contains("overflow") {
        PgError::new("22003", msg.to_owned())
    } else if lower.contains("cast error")
        || lower.contains("cannot cast")
        || lower.contains("can't cast")
    {
        cast_error(msg)
    } else if lower.contains("unrecognized configuration parameter") {
        PgError::new("42704", msg.to_owned())
    } else {
        PgError::new("XX000", msg.to_owned())
    }
}

/// Arrow's cast failures in PostgreSQL's words: out-of-range numbers are 22003, text that does
/// not parse is 22P02 naming the PostgreSQL type.
fn cast_error(msg: &str) -> PgError {
    let msg = msg
        .trim_start_matches("Cast error: ")
        .trim_start_matches("Parser error: ");
    // Arrow: "Invalid input syntax for type interval: "abc"" (PostgreSQL: 22007).
    if let Some(rest) = msg.strip_prefix("Invalid input syntax for type interval: ") {
        return PgError::new(
            "22007",
            format!("invalid input syntax for type interval: {rest}"),
        );
    }
    // "Can't cast value 70000 to type Int16"
    if let Some(rest) = msg.strip_prefix("Can't cast value ")
        && let Some((_, ty)) = rest.rsplit_once(" to type ")
    {
        return PgError::new("22003", format!("{} out of range", pg_type_name(ty)));
    }
    // "Cannot cast to Decimal128(12, 2). Overflowing on ..." / "Value overflows ..."
    if msg.to_lowercase().contains("overflow") {
        let ty = if msg.contains("Decimal") {
            "numeric field overflow".to_owned()
        } else {
            "value out of range".to_owned()
        };
        return PgError::new("22003", ty);
    }
    // "Cannot cast string 'abc' to value of Decimal128(38, 10) type"
    for prefix in ["Cannot cast string '", "Cannot cast value '"] {
        if let Some(rest) = msg.strip_prefix(prefix)
            && let Some((value, tail)) = rest.rsplit_once("' to value of ")
        {
            let ty = tail.trim_end_matches(" type");
            // An integer too wide for its type is out of range, not bad input.
            let digits = value.trim().trim_start_matches(['+', '-']);
            if ty.starts_with("Int")
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
            {
                return PgError::new(
                    "22003",
                    format!(
                        "value \"{value}\" is out of range for type {}",
                        pg_type_name(ty)
                    ),
                );
            }
            return PgError::new(
                "22P02",
                format!(
                    "invalid input syntax for type {}: \"{value}\"",
                    pg_type_name(ty)
                ),
            );
        }
    }
    PgError::new("22P02", msg.to_owned())
}

/// PostgreSQL's name for an Arrow type as Arrow prints it (`Int16` → `smallint`).
fn pg_type_name(arrow: &str) -> &str {
    let base = arrow.split('(').next().unwrap_or(arrow).trim();
    match base {
        "Int8" | "Int16" | "UInt8" => "smallint",
        "Int32" | "UInt16" => "integer",
        "Int64" | "UInt32" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Decimal128" | "Decimal256" | "UInt64" => "numeric",
        "Boolean" => "boolean",
        "Date32" | "Date64" => "date",
        "Time32" | "Time64" => "time without time zone",
        "Timestamp" if arrow.contains(',') && !arrow.contains("None") => "timestamp with time zone",
        "Timestamp" => "timestamp without time zone",
        "Binary" | "LargeBinary" | "BinaryView" => "bytea",
        "Utf8" | "LargeUtf8" | "Utf8View" => "text",
        other => other,
    }
}

fn from_arrow(e: &ArrowError) -> PgError {
    match e {
        ArrowError::DivideByZero => PgError::new("22012", "division by zero"),
        ArrowError::ArithmeticOverflow(msg) => PgError::new("22003", msg.clone()),
        ArrowError::CastError(msg) | ArrowError::ParseError(msg) => cast_error(msg),
        ArrowError::ComputeError(msg) if regex_error(msg).is_some() => {
            regex_error(msg).unwrap_or_else(|| PgError::internal(msg))
        }
        ArrowError::ComputeError(msg) if function_error(msg).is_some() => {
            function_error(msg).unwrap_or_else(|| PgError::internal(msg))
        }
        ArrowError::ComputeError(msg) if msg.to_lowercase().contains("overflow") => {
            PgError::new("22003", msg.clone())
        }
        ArrowError::ExternalError(inner) => {
            if let Some(df) = inner.downcast_ref::<DataFusionError>() {
                from_datafusion(df)
            } else if let Some(e) = inner.downcast_ref::<regex::Error>() {
                PgError::new("2201B", format!("invalid regular expression: {e}"))
            } else if let Some(e) = inner.downcast_ref::<regex_syntax::Error>() {
                // DataFusion's simplifier parses constant patterns of `~` ahead of running.
                PgError::new("2201B", format!("invalid regular expression: {e}"))
            } else {
                PgError::internal(inner)
            }
        }
        ArrowError::MemoryError(msg) => PgError::new("53200", msg.clone()),
        ArrowError::InvalidArgumentError(msg) if msg.contains("to store in a Decimal") => {
            PgError::new("22003", "numeric field overflow").with_detail(msg.clone())
        }
        other => PgError::new("XX000", other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_datafusion_errors() {
        let cases: Vec<(DataFusionError, &str)> = vec![
            (
                DataFusionError::Plan("table 'd.public.nope' not found".into()),
                "42P01",
            ),
            (DataFusionError::NotImplemented("x".into()), "0A000"),
            (
                DataFusionError::ArrowError(Box::new(ArrowError::DivideByZero), None),
                "22012",
            ),
            (
                DataFusionError::ArrowError(Box::new(ArrowError::CastError("x".into())), None),
                "22P02",
            ),
            (
                DataFusionError::Execution("Arithmetic overflow".into()),
                "22003",
            ),
            (
                DataFusionError::ArrowError(
                    Box::new(ArrowError::CastError(
                        "Cannot cast string '99999' to value of Int16 type".into(),
                    )),
                    None,
                ),
                "22003",
            ),
            (
                DataFusionError::ArrowError(
                    Box::new(ArrowError::CastError(
                        "Cannot cast string '9x' to value of Int16 type".into(),
                    )),
                    None,
                ),
                "22P02",
            ),
            (
                DataFusionError::Context(
                    "ctx".into(),
                    Box::new(DataFusionError::NotImplemented("y".into())),
                ),
                "0A000",
            ),
            (
                DataFusionError::External(Box::new(PgError::canceled_by_user())),
                "57014",
            ),
        ];
        for (e, code) in cases {
            assert_eq!(PgError::from(e).code, code);
        }
        for (msg, code) in [
            (
                "Column in SELECT must be in GROUP BY or an aggregate function: While expanding \
                 wildcard, column \"t.name\" must appear in the GROUP BY clause",
                "42803",
            ),
            (
                "Order by column out of bounds, specified: 9, max: 1",
                "42P10",
            ),
            ("LIMIT must be >= 0, '-1' was provided", "2201W"),
            ("OFFSET must be >=0, '-1' was provided", "2201X"),
            ("UNION queries have different number of columns", "42601"),
            (
                "Cannot coerce arithmetic expression Date32 + Date32 to valid types",
                "42883",
            ),
            ("Something new", "42000"),
        ] {
            assert_eq!(
                PgError::from(DataFusionError::Plan(msg.into())).code,
                code,
                "{msg}"
            );
        }
        let e = PgError::from(DataFusionError::Plan(
            "table 'd.public.nope' not found".into(),
        ));
        assert_eq!(e.message, "relation \"nope\" does not exist");
    }

    /// An I/O failure of the object store, as object_store reports one.
    fn io_failure() -> StorageError {
        StorageError::from(object_store::Error::Generic {
            store: "S3",
            source: "connection reset by peer".into(),
        })
    }

    #[test]
    fn maps_storage_errors_by_kind() {
        use crate::storage::{CommitError, VersionError};
        use std::sync::Arc;

        let io = PgError::from(io_failure());
        assert_eq!(io.code, "58030");
        assert!(io.message.contains("connection reset by peer"), "{io:?}");
        assert!(io.hint.is_some());

        let missing = PgError::from(StorageError::from(object_store::Error::NotFound {
            path: "/wh/public.db/t/bucket-0/data-1.parquet".into(),
            source: "No such file or directory".into(),
        }));
        assert_eq!(missing.code, "58P01");
        assert!(missing.message.contains("data-1.parquet"), "{missing:?}");
        assert!(missing.detail.unwrap().contains("deleted"));
        assert!(missing.hint.unwrap().contains("VERSION AS OF"));

        // Parquet's I/O failures are I/O failures; what it says about the bytes is damage.
        let under_parquet = |e: object_store::Error| {
            PgError::from(StorageError::from(parquet::errors::ParquetError::External(
                Box::new(e),
            )))
            .code
        };
        assert_eq!(
            under_parquet(object_store::Error::Generic {
                store: "S3",
                source: "timeout".into()
            }),
            "58030"
        );
        assert_eq!(
            under_parquet(object_store::Error::NotFound {
                path: "f".into(),
                source: "gone".into()
            }),
            "58P01"
        );
        assert_eq!(
            PgError::from(StorageError::from(parquet::errors::ParquetError::General(
                "bad footer".into()
            )))
            .code,
            "XX001"
        );
        assert_eq!(
            PgError::from(StorageError::format("bad snapshot")).code,
            "XX001"
        );

        let bug = PgError::from(StorageError::internal("a writer task panicked: boom"));
        assert_eq!(bug.code, "XX000");
        assert!(bug.message.contains("a writer task panicked: boom"));

        // A failed group round: each waiter sees the round's own kind, and where it failed.
        let grouped =
            |e: StorageError| PgError::from(StorageError::from(CommitError::Group(Arc::new(e))));
        let round_io = grouped(io_failure());
        assert_eq!(round_io.code, "58030");
        assert!(round_io.context.unwrap().contains("group commit"));
        let round_conflict = grouped(StorageError::CommitConflict("row 1".into()));
        assert_eq!(round_conflict.code, "40001");
        assert!(round_conflict.hint.unwrap().contains("retry"));
        let round_duplicate = grouped(StorageError::DuplicateKey {
            constraint: "t_pkey".into(),
            detail: "Key (id)=(1) already exists.".into(),
        });
        assert_eq!(round_duplicate.code, "23505");
        assert_eq!(
            round_duplicate.detail.as_deref(),
            Some("Key (id)=(1) already exists.")
        );
        let unanswered = PgError::from(StorageError::from(CommitError::Unanswered));
        assert_eq!(unanswered.code, "08007");
        assert!(unanswered.hint.is_some());

        let expired = PgError::from(StorageError::from(VersionError::Expired {
            table: "public.t".into(),
            id: 3,
        }));
        assert_eq!(expired.code, "40001");
        assert!(expired.message.contains("run the statement again"));
        let bad_tag = PgError::from(StorageError::from(VersionError::InvalidTagName {
            name: "a/b".into(),
            reason: "tag names must not contain '/'",
        }));
        assert_eq!(bad_tag.code, "42602");

        // Through DataFusion (how a scan's error reaches the wire) the kind is the same.
        for (e, code) in [
            (io_failure(), "58030"),
            (StorageError::internal("x"), "XX000"),
        ] {
            assert_eq!(
                PgError::from(DataFusionError::External(Box::new(e))).code,
                code
            );
        }
        assert_eq!(
            PgError::from(DataFusionError::ObjectStore(Box::new(
                object_store::Error::NotFound {
                    path: "f".into(),
                    source: "gone".into()
                }
            )))
            .code,
            "58P01"
        );
    }

    /// A commit whose snapshot write fails on a fault-injecting store: the client sees an I/O
    /// error, never "corrupt or unreadable table metadata".
    #[tokio::test]
    async fn a_failed_put_during_commit_is_58030_at_the_wire() {
        let e = crate::storage::fault_tests::commit_with_failed_snapshot_put().await;
        let pg = PgError::from(&e);
        assert_eq!(pg.code, "58030", "{pg:?}");
        assert!(pg.message.contains("injected fault"), "{pg:?}");
        assert!(pg.context.unwrap().contains("group commit"));
    }
}
