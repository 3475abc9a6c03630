//! `CALL sys.<procedure>(args)`: Paimon's table maintenance procedures (create_tag,
//! delete_tag, ...), as Paimon's Spark and Flink integrations spell them.
//!
//! Arguments are constants (a table name, a tag name, a snapshot id), positional or named
//! (`retain_max => 10`); the session runs the procedure itself, nothing is planned.

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value,
};

use super::SqlError;

/// One parsed CALL.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    /// The procedure's name without the `sys.` schema, lower case (`create_tag`).
    pub procedure: String,
    pub args: Vec<CallArg>,
}

/// One argument: its name when given as `name => value`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallArg {
    pub name: Option<String>,
    pub value: CallValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CallValue {
    Text(String),
    Integer(i64),
    Boolean(bool),
    Null,
}

impl CallSpec {
    /// Reads `CALL name(args)`: the procedure must be in schema `sys` (or unqualified).
    pub fn from_function(function: &Function) -> Result<Self, SqlError> {
        let parts: Vec<String> = function
            .name
            .0
            .iter()
            .map(|p| p.to_string().trim_matches('"').to_lowercase())
            .collect();
        let procedure = match parts.as_slice() {
            [name] => name.clone(),
            [schema, name] if schema == "sys" => name.clone(),
            _ => {
                return Err(SqlError::UndefinedFunction(format!(
                    "procedure {} does not exist; tarn's procedures are sys.create_tag, \
                     sys.delete_tag, ...",
                    function.name
                )));
            }
        };
        let list = match &function.args {
            FunctionArguments::None => Vec::new(),
            FunctionArguments::List(list) => list.args.clone(),
            FunctionArguments::Subquery(_) => {
                return Err(SqlError::Syntax(format!(
                    "syntax error: CALL {procedure} takes constant arguments"
                )));
            }
        };
        let mut args = Vec::new();
        for arg in list {
            let (name, expr) = match arg {
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    name: Expr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => (Some(name.value.to_lowercase()), e),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (None, e),
                other => {
                    return Err(SqlError::Syntax(format!(
                        "syntax error: CALL {procedure}: argument {other} is not a constant \
                         (write name => value or a literal)"
                    )));
                }
            };
            args.push(CallArg {
                name,
                value: constant(&procedure, &expr)?,
            });
        }
        Ok(Self { procedure, args })
    }
}

fn constant(procedure: &str, expr: &Expr) -> Result<CallValue, SqlError> {
    let bad = || {
        SqlError::Syntax(format!(
            "syntax error: CALL {procedure}: argument {expr} is not a constant (a string, an \
             integer, a boolean or NULL)"
        ))
    };
    match expr {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Ok(CallValue::Text(s.clone())),
            Value::Number(n, _) => n.parse().map(CallValue::Integer).map_err(|_| bad()),
            Value::Null => Ok(CallValue::Null),
            Value::Boolean(b) => Ok(CallValue::Boolean(*b)),
            _ => Err(bad()),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match constant(procedure, expr)? {
            CallValue::Integer(i) => Ok(CallValue::Integer(-i)),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Command, parse};
    use super::*;

    fn call(sql: &str) -> CallSpec {
        match parse(sql).unwrap().pop().unwrap() {
            Command::Call(c) => c,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn reads_positional_and_named_constants() {
        let c = call("CALL sys.create_tag('orders', 'month_end', 42)");
        assert_eq!(c.procedure, "create_tag");
        assert_eq!(
            c.args.iter().map(|a| a.value.clone()).collect::<Vec<_>>(),
            vec![
                CallValue::Text("orders".into()),
                CallValue::Text("month_end".into()),
                CallValue::Integer(42)
            ]
        );
        let c = call("call SYS.Expire_Snapshots('orders', retain_max => 10)");
        assert_eq!(c.procedure, "expire_snapshots");
        assert_eq!(c.args[1].name.as_deref(), Some("retain_max"));
        assert_eq!(c.args[1].value, CallValue::Integer(10));
    }

    #[test]
    fn refuses_other_schemas_and_expressions() {
        assert!(parse("CALL other.create_tag('t', 'x')").is_err());
        assert!(parse("CALL sys.create_tag('t', 1 + 2)").is_err());
    }
}
