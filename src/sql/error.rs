//! Errors of the SQL layer (parsing and statement classification).

use datafusion::error::DataFusionError;

/// A statement that cannot be parsed or is not supported.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The text is not valid SQL (SQLSTATE 42601).
    #[error("{0}")]
    Syntax(String),
    /// Valid SQL that tarn does not support (SQLSTATE 0A000).
    #[error("{0}")]
    Unsupported(String),
    /// A value that does not fit its setting or option (SQLSTATE 22023).
    #[error("{0}")]
    InvalidValue(String),
    /// A table definition names a column twice (SQLSTATE 42701); the message says where.
    #[error("{0}")]
    DuplicateColumn(String),
    /// A definition names a column that does not exist (SQLSTATE 42703).
    #[error("{0}")]
    UndefinedColumn(String),
    /// A table definition that cannot be (SQLSTATE 42P16).
    #[error("{0}")]
    InvalidDefinition(String),
    /// A name tarn cannot use for a file (SQLSTATE 42602).
    #[error("{0}")]
    InvalidName(String),
    /// ON CONFLICT names columns that are not the primary key (SQLSTATE 42P10).
    #[error("there is no unique or exclusion constraint matching the ON CONFLICT specification")]
    NoMatchingConstraint,
    /// A constraint or other object that does not exist (SQLSTATE 42704).
    #[error("{0}")]
    UndefinedObject(String),
    /// A function or procedure that does not exist (SQLSTATE 42883).
    #[error("{0}")]
    UndefinedFunction(String),
    /// A recursive query of a shape PostgreSQL refuses (SQLSTATE 42P19).
    #[error("{0}")]
    InvalidRecursion(String),
    /// A table name that no FROM item of the query gives (SQLSTATE 42P01).
    #[error("{0}")]
    UndefinedTable(String),
    /// A literal that is no value of its type, e.g. a column's DEFAULT (SQLSTATE 22P02).
    #[error("{0}")]
    InvalidText(String),
    /// A value for an identity column `GENERATED ALWAYS` (SQLSTATE 428C9).
    #[error("{0}")]
    GeneratedAlways(String),
}

impl SqlError {
    pub(crate) fn from_parser(e: DataFusionError) -> Self {
        match e {
            DataFusionError::SQL(e, _) => Self::Syntax(format!("syntax error: {e}")),
            other => Self::Syntax(format!("syntax error: {}", other.strip_backtrace())),
        }
    }

    /// A sqlparser error (from a direct parse).
    #[cfg(test)]
    pub(crate) fn from_sqlparser(e: datafusion::sql::sqlparser::parser::ParserError) -> Self {
        Self::Syntax(format!("syntax error: {e}"))
    }

    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Self::Syntax(_) => "42601",
            Self::Unsupported(_) => "0A000",
            Self::InvalidValue(_) => "22023",
            Self::DuplicateColumn(_) => "42701",
            Self::UndefinedColumn(_) => "42703",
            Self::InvalidDefinition(_) => "42P16",
            Self::InvalidName(_) => "42602",
            Self::NoMatchingConstraint => "42P10",
            Self::UndefinedObject(_) => "42704",
            Self::UndefinedFunction(_) => "42883",
            Self::InvalidRecursion(_) => "42P19",
            Self::UndefinedTable(_) => "42P01",
            Self::InvalidText(_) => "22P02",
            Self::GeneratedAlways(_) => "428C9",
        }
    }
}
