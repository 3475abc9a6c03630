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
}

impl SqlError {
    pub(crate) fn from_parser(e: DataFusionError) -> Self {
        match e {
            DataFusionError::SQL(e, _) => Self::Syntax(format!("syntax error: {e}")),
            other => Self::Syntax(format!("syntax error: {}", other.strip_backtrace())),
        }
    }

    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Self::Syntax(_) => "42601",
            Self::Unsupported(_) => "0A000",
            Self::InvalidValue(_) => "22023",
        }
    }
}
