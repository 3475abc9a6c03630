//! PostgreSQL's bytea functions where DataFusion's differ: `encode(bytes, 'base64')` writes
//! padding and breaks lines at 76 characters as PostgreSQL does, `decode` reads what `encode`
//! writes, and `convert_from`/`convert_to` (DataFusion has neither) move between bytea and text
//! in UTF8 (the one server encoding tarn has).

use base64::Engine;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{Signature, Volatility};
use datafusion::prelude::SessionContext;

use super::patterns::text_arg;
use super::{data_error, session_fn};

/// Registers the bytea functions of this family.
pub fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(session_fn("encode", any(), DataType::Utf8, |args| {
        let (Some(bytes), Some(format)) = (bytes_arg(&args[0]), text_arg(args, 1)) else {
            return Ok(ScalarValue::Utf8(None));
        };
        Ok(ScalarValue::Utf8(Some(encode(&bytes, &format)?)))
    }));
    ctx.register_udf(session_fn("decode", any(), DataType::Binary, |args| {
        let (Some(text), Some(format)) = (text_arg(args, 0), text_arg(args, 1)) else {
            return Ok(ScalarValue::Binary(None));
        };
        Ok(ScalarValue::Binary(Some(decode(&text, &format)?)))
    }));
    ctx.register_udf(session_fn("convert_from", any(), DataType::Utf8, |args| {
        let (Some(bytes), Some(encoding)) = (bytes_arg(&args[0]), text_arg(args, 1)) else {
            return Ok(ScalarValue::Utf8(None));
        };
        check_encoding(&encoding)?;
        String::from_utf8(bytes)
            .map(|s| ScalarValue::Utf8(Some(s)))
            .map_err(|_| data_error("22021", "invalid byte sequence for encoding \"UTF8\""))
    }));
    ctx.register_udf(session_fn("convert_to", any(), DataType::Binary, |args| {
        let (Some(text), Some(encoding)) = (text_arg(args, 0), text_arg(args, 1)) else {
            return Ok(ScalarValue::Binary(None));
        };
        check_encoding(&encoding)?;
        Ok(ScalarValue::Binary(Some(text.into_bytes())))
    }));
}

/// `bytea::text`: bytea's output form, `\x` and the bytes in hex.
pub fn bytea_text_udf() -> datafusion::logical_expr::ScalarUDF {
    session_fn(
        "pg_bytea_text",
        Signature::any(1, Volatility::Immutable),
        DataType::Utf8,
        |args| {
            Ok(ScalarValue::Utf8(bytes_arg(&args[0]).map(|b| {
                format!("\\x{}", encode(&b, "hex").unwrap_or_default())
            })))
        },
    )
}

fn check_encoding(name: &str) -> Result<()> {
    let n = name.to_ascii_uppercase().replace(['-', '_'], "");
    if n == "UTF8" || n == "UNICODE" {
        Ok(())
    } else {
        Err(data_error(
            "22023",
            format!("invalid source encoding name \"{name}\""),
        ))
    }
}

/// A bytea argument's bytes (text arguments are their UTF-8 bytes, as an unknown literal).
fn bytes_arg(value: &ScalarValue) -> Option<Vec<u8>> {
    match value {
        ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b) => {
            b.clone()
        }
        ScalarValue::FixedSizeBinary(_, b) => b.clone(),
        v if v.is_null() => None,
        v => match v.try_as_str() {
            Some(s) => s.map(|s| s.as_bytes().to_vec()),
            None => Some(v.to_string().into_bytes()),
        },
    }
}

fn unknown_format(format: &str) -> datafusion::error::DataFusionError {
    data_error("22023", format!("unrecognized encoding: \"{format}\""))
}

/// `encode(bytes, format)` for `hex`, `base64` (76-character lines) and `escape`.
pub fn encode(bytes: &[u8], format: &str) -> Result<String> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => Ok(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        "base64" => {
            let flat = base64::engine::general_purpose::STANDARD.encode(bytes);
            let lines: Vec<&str> = flat
                .as_bytes()
                .chunks(76)
                .map(|c| std::str::from_utf8(c).unwrap_or_default())
                .collect();
            Ok(lines.join("\n"))
        }
        "escape" => Ok(bytes
            .iter()
            .map(|&b| match b {
                b'\\' => "\\\\".to_owned(),
                0 | 0x80..=0xff => format!("\\{b:03o}"),
                _ => (b as char).to_string(),
            })
            .collect()),
        _ => Err(unknown_format(format)),
    }
}

/// `decode(text, format)`, the inverse of [`encode`].
pub fn decode(text: &str, format: &str) -> Result<Vec<u8>> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => {
            let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
            if !digits.len().is_multiple_of(2) {
                return Err(data_error(
                    "22023",
                    "invalid hexadecimal data: odd number of digits",
                ));
            }
            digits
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                        .ok_or_else(|| data_error("22023", "invalid hexadecimal digit"))
                })
                .collect()
        }
        "base64" => {
            let flat: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(flat)
                .map_err(|e| data_error("22023", format!("invalid base64 data: {e}")))
        }
        "escape" => Ok(text.as_bytes().to_vec()),
        _ => Err(unknown_format(format)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_postgres() {
        assert_eq!(encode(b"hello", "base64").unwrap(), "aGVsbG8=");
        assert_eq!(encode(b"abc", "hex").unwrap(), "616263");
        assert_eq!(decode("aGVsbG8=", "base64").unwrap(), b"hello");
        assert_eq!(decode("616263", "hex").unwrap(), b"abc");
        assert_eq!(encode(&[b'a'; 60], "base64").unwrap().lines().count(), 2);
    }
}
