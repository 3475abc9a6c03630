//! A minimal PostgreSQL frontend for the slt runner's extended-protocol runs.
//!
//! tokio-postgres' `query` always asks for binary results, so the values a record compares would
//! be rendered by the test, not by the server. This connection sends Parse / Bind (every result
//! column in text format) / Describe / Execute / Sync for one statement with no parameters, the
//! way libpq-based drivers (psycopg, pg8000 in its text mode, JDBC before prepareThreshold) run
//! an unparameterised statement, and reads the server's own text. A string holding several
//! statements cannot be one extended-protocol statement (PostgreSQL refuses it with 42601), so it
//! goes through the simple protocol ('Q') on the same connection, keeping session state.
//!
//! Trust authentication only (the test servers: tarn and the throwaway PostgreSQL 15).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What one statement returned: result rows (text, `None` for NULL) or a completed command.
pub enum Output {
    Rows {
        columns: usize,
        rows: Vec<Vec<Option<String>>>,
    },
    Complete(u64),
}

/// A server error: SQLSTATE and message.
pub struct ServerError {
    pub code: String,
    pub message: String,
}

pub struct WireConn {
    stream: TcpStream,
}

fn put_cstr(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
}

/// One frontend message: type byte, length (counting itself), body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(kind);
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn io_error(e: std::io::Error) -> ServerError {
    ServerError {
        code: format!("08006 (connection: {e})"),
        message: e.to_string(),
    }
}

/// Reads a NUL-terminated string at `*pos`, advancing past it.
fn cstr(body: &[u8], pos: &mut usize) -> String {
    let start = *pos;
    let end = body[start..]
        .iter()
        .position(|&b| b == 0)
        .map_or(body.len(), |i| start + i);
    *pos = (end + 1).min(body.len());
    String::from_utf8_lossy(&body[start..end]).into_owned()
}

fn error_response(body: &[u8]) -> ServerError {
    let mut err = ServerError {
        code: String::new(),
        message: String::new(),
    };
    let mut pos = 0;
    while pos < body.len() && body[pos] != 0 {
        let field = body[pos];
        pos += 1;
        let value = cstr(body, &mut pos);
        match field {
            b'C' => err.code = value,
            b'M' => err.message = value,
            _ => {}
        }
    }
    err
}

fn data_row(body: &[u8]) -> Vec<Option<String>> {
    let n = i16::from_be_bytes([body[0], body[1]]) as usize;
    let mut pos = 2;
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        let len = i32::from_be_bytes(body[pos..pos + 4].try_into().unwrap());
        pos += 4;
        if len < 0 {
            row.push(None);
        } else {
            let len = len as usize;
            row.push(Some(
                String::from_utf8_lossy(&body[pos..pos + len]).into_owned(),
            ));
            pos += len;
        }
    }
    row
}

/// The row count of a command tag (`INSERT 0 3`, `SELECT 2`, `CREATE TABLE` → 0), as
/// tokio-postgres reports it.
fn tag_count(body: &[u8]) -> u64 {
    let mut pos = 0;
    let tag = cstr(body, &mut pos);
    tag.rsplit(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

impl WireConn {
    pub async fn connect(port: u16, user: &str) -> Result<Self, ServerError> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(io_error)?;
        let mut conn = Self { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes()); // protocol 3.0
        for (k, v) in [
            ("client_encoding", "UTF8"),
            ("user", user),
            ("database", "postgres"),
        ] {
            put_cstr(&mut body, k);
            put_cstr(&mut body, v);
        }
        body.push(0);
        let mut startup = (body.len() as i32 + 4).to_be_bytes().to_vec();
        startup.extend_from_slice(&body);
        conn.stream.write_all(&startup).await.map_err(io_error)?;
        loop {
            let (kind, body) = conn.read_message().await?;
            match kind {
                b'R' if body[..4] != [0, 0, 0, 0] => {
                    return Err(ServerError {
                        code: "28000 (the slt runner supports trust authentication only)".into(),
                        message: String::new(),
                    });
                }
                b'E' => return Err(error_response(&body)),
                b'Z' => return Ok(conn),
                _ => {}
            }
        }
    }

    async fn read_message(&mut self) -> Result<(u8, Vec<u8>), ServerError> {
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head).await.map_err(io_error)?;
        let len = i32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len.saturating_sub(4)];
        self.stream.read_exact(&mut body).await.map_err(io_error)?;
        Ok((head[0], body))
    }

    /// Runs `sql` as one unnamed extended-protocol statement with text results.
    pub async fn extended(&mut self, sql: &str) -> Result<Output, ServerError> {
        let mut parse = Vec::new();
        put_cstr(&mut parse, ""); // unnamed statement
        put_cstr(&mut parse, sql);
        parse.extend_from_slice(&0i16.to_be_bytes()); // no parameter types
        let mut bind = Vec::new();
        put_cstr(&mut bind, ""); // unnamed portal
        put_cstr(&mut bind, "");
        bind.extend_from_slice(&0i16.to_be_bytes()); // no parameter formats
        bind.extend_from_slice(&0i16.to_be_bytes()); // no parameters
        bind.extend_from_slice(&1i16.to_be_bytes()); // one result format for all columns:
        bind.extend_from_slice(&0i16.to_be_bytes()); // text
        let mut describe = vec![b'P'];
        put_cstr(&mut describe, "");
        let mut execute = Vec::new();
        put_cstr(&mut execute, "");
        execute.extend_from_slice(&0i32.to_be_bytes()); // all rows
        let mut out = message(b'P', &parse);
        out.extend(message(b'B', &bind));
        out.extend(message(b'D', &describe));
        out.extend(message(b'E', &execute));
        out.extend(message(b'S', &[]));
        self.stream.write_all(&out).await.map_err(io_error)?;
        self.collect().await
    }

    /// Runs `sql` (one or more statements) over the simple protocol.
    pub async fn simple(&mut self, sql: &str) -> Result<Output, ServerError> {
        let mut body = Vec::new();
        put_cstr(&mut body, sql);
        self.stream
            .write_all(&message(b'Q', &body))
            .await
            .map_err(io_error)?;
        self.collect().await
    }

    /// Reads responses up to ReadyForQuery. Like tokio-postgres' `simple_query` as the runner
    /// uses it: rows of all result sets, the column count of the last row description, the
    /// count of the last command, and the first error.
    async fn collect(&mut self) -> Result<Output, ServerError> {
        let mut columns = None;
        let mut rows = Vec::new();
        let mut count = 0;
        let mut error = None;
        loop {
            let (kind, body) = self.read_message().await?;
            match kind {
                b'T' => columns = Some(i16::from_be_bytes([body[0], body[1]]) as usize),
                b'D' => rows.push(data_row(&body)),
                b'C' => count = tag_count(&body),
                // The first error is the one a client reports.
                b'E' if error.is_none() => error = Some(error_response(&body)),
                // COPY FROM STDIN: an slt record carries no data; refuse it rather than leave
                // the server waiting (it answers with an error, then ReadyForQuery).
                b'G' => {
                    let mut fail = Vec::new();
                    put_cstr(&mut fail, "slt records carry no COPY data");
                    self.stream
                        .write_all(&message(b'f', &fail))
                        .await
                        .map_err(io_error)?;
                }
                b'Z' => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        Ok(match columns {
            Some(columns) => Output::Rows { columns, rows },
            None => Output::Complete(count),
        })
    }
}
