//! pgwire glue: one [`ConnectionHandler`] per client connection.
//!
//! The handler owns the connection's [`Session`] (created at startup) and translates between
//! protocol messages and session calls. The simple query protocol is driven here statement by
//! statement, so each result streams before the next statement runs and an error stops the rest.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Schema};
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{
    ExtendedQueryHandler, SimpleQueryHandler, send_describe_response, send_execution_response,
    send_query_response, send_ready_for_query,
};
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, DEFAULT_NAME, METADATA_DATABASE, METADATA_USER, NoopHandler,
    PgWireConnectionState, PgWireServerHandlers, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, Parse, ParseComplete, Sync as PgSync,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    EmptyQueryResponse, NoticeResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::{Authentication, ParameterStatus};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::types::format::FormatOptions;
use tokio::sync::Mutex;

use super::auth::{self, AuthMethod, AuthState, ScramExchange, scram::ScramError};
use super::cancel::CancelRegistry;
use super::deferred_flush::Deferred;
use super::error::PgError;
use super::session::{CopyInStart, CopyOut, Outcome, Output, Prepared, Session, TxState, copy_out};
use super::settings::Settings;
use super::stream::{controlled, query_response, row_fields};
use crate::query::QueryEngine;
use crate::sql::Command;

/// What all connections of one server share.
#[derive(Debug)]
pub struct Shared {
    pub engine: Arc<QueryEngine>,
    pub cancels: Arc<CancelRegistry>,
    pub keys: RandomPidSecretKeyGenerator,
    pub auth: super::auth::AuthConfig,
    /// Open sessions against `max_connections`.
    pub connections: Arc<ConnectionCount>,
}

pub use super::startup::{ConnectionCount, DEFAULT_MAX_CONNECTIONS};

type SessionCell = Arc<Mutex<Option<Session>>>;

/// The handlers of one connection.
pub struct ConnectionHandler {
    shared: Arc<Shared>,
    /// This connection's place among `max_connections` (released when the handler drops).
    admitted: std::sync::Mutex<Option<super::startup::Admission>>,
    session: SessionCell,
    parser: Arc<TarnQueryParser>,
    /// The password exchange while the connection starts.
    auth: Mutex<AuthState>,
    /// Statements of a simple query that follow its COPY FROM STDIN: run after CopyDone.
    after_copy: Mutex<Vec<Command>>,
}

impl ConnectionHandler {
    pub fn new(shared: Arc<Shared>) -> Self {
        let session: SessionCell = Arc::new(Mutex::new(None));
        Self {
            shared,
            admitted: std::sync::Mutex::new(None),
            parser: Arc::new(TarnQueryParser {
                session: Arc::clone(&session),
            }),
            session,
            auth: Mutex::new(AuthState::NotStarted),
            after_copy: Mutex::new(Vec::new()),
        }
    }
}

/// `process_socket` takes the handler set by value; this wraps the shared handler.
pub struct Handlers(pub Arc<ConnectionHandler>);

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.0)
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.0)
    }
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.0)
    }
    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        Arc::clone(&self.0)
    }
    fn error_handler(&self) -> Arc<impl pgwire::api::ErrorHandler> {
        Arc::new(NoopHandler)
    }
    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::clone(&self.0)
    }
}

/// ParameterStatus values sent at startup: the session's reported settings.
struct StartupParameters(Vec<(String, String)>);

impl ServerParameterProvider for StartupParameters {
    fn server_parameters<C: ClientInfo>(
        &self,
        _client: &C,
    ) -> Option<std::collections::HashMap<String, String>> {
        Some(self.0.iter().cloned().collect())
    }
}

fn fatal(e: PgError) -> PgWireError {
    let mut info: ErrorInfo = e.into();
    info.severity = "FATAL".to_owned();
    PgWireError::UserError(Box::new(info))
}

#[async_trait]
impl StartupHandler for ConnectionHandler {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let method = self.shared.auth.method;
        match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                let user = client.metadata().get(METADATA_USER).cloned();
                if self.shared.auth.tls_required && !client.is_secure() {
                    return Err(fatal(auth::tls_needed(user.as_deref().unwrap_or(""))));
                }
                let request = match method {
                    AuthMethod::Trust => return self.open_session(client).await,
                    AuthMethod::Password => {
                        *self.auth.lock().await = AuthState::AwaitingPassword;
                        Authentication::CleartextPassword
                    }
                    AuthMethod::ScramSha256 => {
                        *self.auth.lock().await = AuthState::Scram(ScramExchange::Start);
                        Authentication::SASL(vec![auth::scram::MECHANISM.to_owned()])
                    }
                };
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client
                    .send(PgWireBackendMessage::Authentication(request))
                    .await?;
                Ok(())
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                let user = client
                    .metadata()
                    .get(METADATA_USER)
                    .cloned()
                    .unwrap_or_default();
                let failed = || fatal(auth::login_failed(method, &user));
                let mut state = self.auth.lock().await;
                match &mut *state {
                    AuthState::AwaitingPassword => {
                        let password = message.into_password()?;
                        let verifier = self.shared.auth.verifier(&user).await.map_err(fatal)?;
                        if !verifier.is_some_and(|v| v.matches_password(&password.password)) {
                            tracing::info!(%user, peer = %client.socket_addr(), "password authentication failed");
                            return Err(failed());
                        }
                    }
                    AuthState::Scram(exchange @ ScramExchange::Start) => {
                        let initial = message.into_sasl_initial_response()?;
                        if initial.auth_method != auth::scram::MECHANISM {
                            return Err(fatal(PgError::new(
                                "28000",
                                format!(
                                    "SASL mechanism {} is not offered: use SCRAM-SHA-256",
                                    initial.auth_method
                                ),
                            )));
                        }
                        let verifier = self.shared.auth.verifier(&user).await.map_err(fatal)?;
                        let server_first = exchange
                            .client_first(initial.data.as_deref().unwrap_or_default(), verifier)
                            .map_err(|e| fatal(PgError::new("08P01", e.to_string())))?;
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::SASLContinue(server_first.into_bytes().into()),
                            ))
                            .await?;
                        return Ok(());
                    }
                    AuthState::Scram(exchange) => {
                        let response = message.into_sasl_response()?;
                        match exchange.client_final(&response.data) {
                            Ok(server_final) => {
                                client
                                    .send(PgWireBackendMessage::Authentication(
                                        Authentication::SASLFinal(server_final.into_bytes().into()),
                                    ))
                                    .await?;
                            }
                            Err(ScramError::BadProof) => {
                                tracing::info!(%user, peer = %client.socket_addr(), "SCRAM authentication failed");
                                return Err(failed());
                            }
                            Err(e) => return Err(fatal(PgError::new("08P01", e.to_string()))),
                        }
                    }
                    AuthState::NotStarted => return Err(not_started()),
                }
                *state = AuthState::NotStarted;
                drop(state);
                self.open_session(client).await
            }
            _ => Ok(()),
        }
    }
}

impl ConnectionHandler {
    /// After authentication: the session, its keys and ParameterStatus, ReadyForQuery.
    async fn open_session<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let admission = self.shared.connections.admit().map_err(fatal)?;
        let (pid, secret) = self.shared.keys.generate(client);
        client.set_pid_and_secret_key(pid, secret.clone());
        let metadata = client.metadata().clone();
        let user = metadata
            .get(METADATA_USER)
            .cloned()
            .unwrap_or_else(|| "tarn".to_owned());
        let database = metadata
            .get(METADATA_DATABASE)
            .cloned()
            .unwrap_or_else(|| user.clone());
        let mut session = Session::new(
            Arc::clone(&self.shared.engine),
            &self.shared.cancels,
            &user,
            &database,
            pid,
            secret.to_bytes().to_vec(),
            &super::startup::startup_settings(&metadata),
        )
        .map_err(fatal)?;
        session.set_server_setting(
            "max_connections",
            &self.shared.connections.max().to_string(),
        );
        *self.admitted.lock().unwrap_or_else(|p| p.into_inner()) = Some(admission);
        let parameters = StartupParameters(session.settings().reported());
        tracing::info!(
            peer = %client.socket_addr(), %user, %database, pid, auth = %self.shared.auth.method,
            tls = client.is_secure(),
            application = %session.settings().get("application_name").unwrap_or_default(),
            "connection opened"
        );
        *self.session.lock().await = Some(session);
        finish_authentication(client, &parameters).await
    }
}

#[async_trait]
impl CancelHandler for ConnectionHandler {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let found = self
            .shared
            .cancels
            .cancel(request.pid, &request.secret_key.to_bytes());
        tracing::info!(pid = request.pid, found, "cancel request");
    }
}

fn not_started() -> PgWireError {
    fatal(PgError::new(
        "08P01",
        "the connection has not completed startup",
    ))
}

/// The pgwire transaction status for the session's state.
fn wire_status(state: TxState) -> TransactionStatus {
    match state {
        TxState::Idle => TransactionStatus::Idle,
        TxState::InBlock => TransactionStatus::Transaction,
        TxState::Failed => TransactionStatus::Error,
    }
}

/// Format options from the session's settings.
fn format_options(settings: &Settings) -> Arc<FormatOptions> {
    let mut options = FormatOptions::default();
    options.date_style = settings.get("datestyle").unwrap_or(options.date_style);
    options.interval_style = settings
        .get("intervalstyle")
        .unwrap_or(options.interval_style);
    options.time_zone = settings.time_zone();
    options.extra_float_digits = settings
        .get("extra_float_digits")
        .and_then(|v| v.parse().ok())
        .unwrap_or(options.extra_float_digits);
    Arc::new(options)
}

/// Sends the notices and ParameterStatus messages of an outcome.
async fn send_side_messages<C>(client: &mut C, outcome: &SideMessages) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for warning in &outcome.warnings {
        let info = ErrorInfo::new("WARNING".to_owned(), "01000".to_owned(), warning.clone());
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    for (code, notice) in &outcome.notices {
        let (message, detail) = match notice.split_once(crate::server::error::NOTICE_DETAIL) {
            Some((message, detail)) => (message.to_owned(), Some(detail.to_owned())),
            None => (notice.clone(), None),
        };
        let mut info = ErrorInfo::new("NOTICE".to_owned(), (*code).to_owned(), message);
        info.detail = detail;
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    for (name, value) in &outcome.parameters {
        client
            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                name.clone(),
                value.clone(),
            )))
            .await?;
    }
    Ok(())
}

/// What the client is told besides a statement's response.
struct SideMessages {
    warnings: Vec<String>,
    notices: Vec<(&'static str, String)>,
    parameters: Vec<(String, String)>,
}

/// What a statement sends back: a pgwire response, or a COPY TO STDOUT, which tarn sends
/// itself (pgwire's own COPY OUT sending counts a header as a row and answers errors with a
/// frontend message).
enum Reply {
    Response(Response),
    Copy(CopyOut),
    /// COPY FROM STDIN started: CopyInResponse, then the client's CopyData.
    CopyIn(CopyInStart),
}

/// Runs one prepared command in `session` under cancellation/timeout control and turns the
/// result into a pgwire response.
async fn run(
    session: &mut Session,
    prepared: Prepared,
    params: Option<datafusion::common::ParamValues>,
    format: &Format,
    simple: bool,
) -> Result<(Reply, SideMessages), PgError> {
    let control = session.start_statement();
    let Outcome {
        output,
        parameters,
        warnings,
        notices,
        binary,
    } = control.run(session.execute(prepared, params)).await?;
    let side = SideMessages {
        warnings,
        notices,
        parameters,
    };
    let response = match output {
        Output::Rows {
            schema,
            batches,
            tag,
        } => {
            let settings = session.settings();
            let options = format_options(&settings);
            let time_zone = settings.time_zone();
            drop(settings);
            let batches = controlled(batches, control);
            // FETCH from a BINARY cursor answers in binary over the simple protocol.
            let format = if binary && simple {
                &Format::UnifiedBinary
            } else {
                format
            };
            Response::Query(query_response(
                &schema, batches, format, options, &time_zone, tag,
            )?)
        }
        Output::Copy {
            schema,
            batches,
            options: copy_options,
            force_quote,
        } => {
            // The values a SELECT returns in text format, written as COPY lines.
            let settings = session.settings();
            let options = format_options(&settings);
            let time_zone = settings.time_zone();
            drop(settings);
            let batches = controlled(batches, control);
            let format = if copy_options.format == crate::sql::copy::CopyFormat::Binary {
                Format::UnifiedBinary
            } else {
                Format::UnifiedText
            };
            let rows = query_response(&schema, batches, &format, options, &time_zone, "COPY")?;
            return Ok((Reply::Copy(copy_out(rows, copy_options, force_quote)), side));
        }
        Output::CopyIn(start) => return Ok((Reply::CopyIn(start), side)),
        Output::Done(tag) => Response::Execution(Tag::new(&tag)),
        Output::Count { command, rows } => {
            let tag = Tag::new(command).with_rows(rows as usize);
            // PostgreSQL's INSERT tag carries an OID, always 0 nowadays: `INSERT 0 n`.
            Response::Execution(if command == "INSERT" {
                tag.with_oid(0)
            } else {
                tag
            })
        }
        Output::TxStart(tag) => Response::TransactionStart(Tag::new(&tag)),
        Output::TxEnd(tag) => Response::TransactionEnd(Tag::new(&tag)),
    };
    Ok((Reply::Response(response), side))
}

/// Sends a COPY TO STDOUT: CopyOutResponse (text format), the header and one CopyData per
/// row, CopyDone and `COPY n`. An error while rows stream ends the copy with ErrorResponse
/// (sent by the caller), as in PostgreSQL.
async fn send_copy_out<C>(client: &mut C, copy: CopyOut) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let CopyOut {
        columns,
        binary,
        header,
        mut rows,
        trailer,
    } = copy;
    let format = i8::from(binary);
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            format,
            columns as i16,
            vec![format.into(); columns],
        )))
        .await?;
    // Binary's signature travels in the same CopyData as the first tuple (or the trailer), as
    // PostgreSQL sends it: clients such as psycopg parse each message as whole tuples.
    let mut signature = None;
    if let Some(header) = header {
        if binary {
            signature = Some(header);
        } else {
            client
                .feed(PgWireBackendMessage::CopyData(CopyData::new(header)))
                .await?;
        }
    }
    let with_signature =
        |data: bytes::Bytes, signature: &mut Option<bytes::Bytes>| match signature.take() {
            Some(s) => [s, data].concat().into(),
            None => data,
        };
    let mut count = 0usize;
    while let Some(line) = rows.next().await {
        let data = with_signature(line?, &mut signature);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(data)))
            .await?;
        count += 1;
    }
    if let Some(trailer) = trailer {
        let data = with_signature(trailer, &mut signature);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(data)))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    client
        .feed(PgWireBackendMessage::CommandComplete(
            Tag::new("COPY").with_rows(count).into(),
        ))
        .await?;
    Ok(())
}

fn is_connection_error(e: &PgWireError) -> bool {
    matches!(e, PgWireError::IoError(_))
}

#[async_trait]
impl SimpleQueryHandler for ConnectionHandler {
    async fn on_query<C>(
        &self,
        client: &mut C,
        query: pgwire::messages::simplequery::Query,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;

        match session.parse_cached(&query.query) {
            Err(e) => {
                let e = PgError::from(e);
                log_failure(session, &query.query, &e);
                session.note_error();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(
                        ErrorInfo::from(e).into(),
                    ))
                    .await?;
            }
            Ok(commands) if commands.is_empty() => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
            }
            Ok(commands) => {
                // DEALLOCATE drops protocol-level statements, which only the client's store
                // holds; checked before the string runs (the COPY path cannot reach the store).
                if let Some(e) = commands.iter().find_map(|c| deallocate(&*client, c).err()) {
                    log_failure(session, &query.query, &e);
                    session.note_error();
                    client
                        .feed(PgWireBackendMessage::ErrorResponse(
                            ErrorInfo::from(e).into(),
                        ))
                        .await?;
                } else if run_simple(
                    client,
                    session,
                    commands.as_ref().clone(),
                    &query.query,
                    Some(&self.after_copy),
                )
                .await?
                {
                    // COPY FROM STDIN: ReadyForQuery comes after CopyDone or CopyFail.
                    client.set_transaction_status(wire_status(session.tx_state()));
                    return Ok(());
                }
            }
        }
        let status = wire_status(session.tx_state());
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // on_query above drives simple queries itself; pgwire never calls this.
        Err(PgError::internal("simple query reached do_query").into())
    }
}

/// Runs the statements of a simple query in order, each answered before the next runs; an
/// error stops the rest. A COPY FROM STDIN stops the loop with its CopyInResponse sent (the
/// statements after it wait in `after_copy`): returns whether that happened.
async fn run_simple<C>(
    client: &mut C,
    session: &mut Session,
    commands: Vec<Command>,
    sql: &str,
    after_copy: Option<&Mutex<Vec<Command>>>,
) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    // Statements after a COPY FROM STDIN run without their text (it is not kept for them).
    let text: Option<Arc<str>> = after_copy.map(|_| Arc::from(sql));
    let mut commands = commands.into_iter().enumerate();
    while let Some((index, command)) = commands.next() {
        if after_copy.is_none() && matches!(&command, Command::Copy(spec) if spec.from_stdin) {
            // pgwire answers CopyDone with ReadyForQuery: a second COPY FROM STDIN in one
            // query string could not wait for its data.
            let e = PgError::new(
                "0A000",
                "only one COPY FROM STDIN per query string is supported: send it separately",
            );
            session.note_error();
            client
                .feed(PgWireBackendMessage::ErrorResponse(
                    ErrorInfo::from(e).into(),
                ))
                .await?;
            break;
        }
        let source = text.as_ref().map(|t| (Arc::clone(t), index));
        let prepared = Prepared::unplanned(command, source);
        let failure = match run(session, prepared, None, &Format::UnifiedText, true).await {
            Ok((Reply::CopyIn(start), outcome)) => {
                send_side_messages(client, &outcome).await?;
                send_copy_in(client, start).await?;
                client.set_state(PgWireConnectionState::CopyInProgress(false));
                if let Some(after_copy) = after_copy {
                    *after_copy.lock().await = commands.map(|(_, c)| c).collect();
                }
                return Ok(true);
            }
            Ok((response, outcome)) => {
                send_side_messages(client, &outcome).await?;
                match send_response(client, response).await {
                    Ok(()) => None,
                    Err(e) if is_connection_error(&e) => return Err(e),
                    Err(e) => Some(ErrorInfo::from(e)),
                }
            }
            Err(e) => {
                log_failure(session, sql, &e);
                Some(ErrorInfo::from(e))
            }
        };
        if let Some(info) = failure {
            client
                .feed(PgWireBackendMessage::ErrorResponse(info.into()))
                .await?;
            break;
        }
    }
    Ok(false)
}

/// CopyInResponse: the client may send CopyData now.
async fn send_copy_in<C>(client: &mut C, start: CopyInStart) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let format = i8::from(start.binary);
    client
        .send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
            format,
            start.columns as i16,
            vec![format.into(); start.columns],
        )))
        .await?;
    Ok(())
}

#[async_trait]
impl pgwire::api::copy::CopyHandler for ConnectionHandler {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;
        match session.copy_from_data(&copy_data.data).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.after_copy.lock().await.clear();
                log_failure(session, "COPY FROM STDIN", &e);
                Err(e.into())
            }
        }
    }

    /// `COPY n`, then the statements that followed the COPY in its simple query.
    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;
        let after: Vec<Command> = std::mem::take(&mut *self.after_copy.lock().await);
        match session.copy_from_done().await {
            Ok(rows) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        Tag::new("COPY").with_rows(rows as usize).into(),
                    ))
                    .await?;
            }
            Err(e) => {
                log_failure(session, "COPY FROM STDIN", &e);
                client.set_transaction_status(wire_status(session.tx_state()));
                return Err(e.into());
            }
        }
        if !after.is_empty() {
            run_simple(client, session, after, "(after COPY)", None).await?;
        }
        client.set_transaction_status(wire_status(session.tx_state()));
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.after_copy.lock().await.clear();
        let mut guard = self.session.lock().await;
        let Some(session) = guard.as_mut() else {
            return not_started();
        };
        let e = session.copy_from_fail(&fail.message).await;
        client.set_transaction_status(wire_status(session.tx_state()));
        e.into()
    }
}

/// `DEALLOCATE name` drops a protocol-level prepared statement (pgwire's store holds them);
/// an unknown name is PostgreSQL's 26000. `DEALLOCATE ALL` cannot list the store: statements
/// Parsed again under the same names replace the old ones, so it is answered as done.
fn deallocate<C: ClientPortalStore>(client: &C, command: &Command) -> Result<(), PgError>
where
    C::PortalStore: PortalStore,
{
    if let Command::Deallocate(Some(name)) = command {
        if client.portal_store().get_statement(name).is_none() {
            return Err(PgError::new(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            ));
        }
        client.portal_store().rm_statement(name);
    }
    Ok(())
}

fn log_failure(session: &Session, sql: &str, e: &PgError) {
    tracing::warn!(
        user = %session.user, code = e.code, error = %e.message,
        statement = %sql.chars().take(200).collect::<String>(),
        "statement failed"
    );
}

/// Writes one statement's response (rows, COPY data or tag) for the simple protocol.
async fn send_response<C>(client: &mut C, reply: Reply) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match reply {
        Reply::Copy(copy) => send_copy_out(client, copy).await,
        Reply::CopyIn(_) => Err(PgError::internal("COPY FROM STDIN reached send_response").into()),
        Reply::Response(Response::Query(results)) => {
            send_query_response(client, results, true).await
        }
        Reply::Response(
            Response::Execution(tag)
            | Response::TransactionStart(tag)
            | Response::TransactionEnd(tag),
        ) => send_execution_response(client, tag).await,
        Reply::Response(_) => Err(PgError::internal("unexpected response kind").into()),
    }
}

/// Parses and plans statements of the extended protocol (Parse message).
pub struct TarnQueryParser {
    session: SessionCell,
}

#[async_trait]
impl QueryParser for TarnQueryParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;
        let commands = session.parse_cached(sql).map_err(PgError::from)?;
        if commands.len() > 1 {
            return Err(PgError::new(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )
            .into());
        }
        let Some(command) = commands.first().cloned() else {
            return Ok(None);
        };
        match session.prepare(command, Some((Arc::from(sql), 0))).await {
            Ok(prepared) => Ok(Some(prepared)),
            Err(e) => {
                log_failure(session, sql, &e);
                session.note_error();
                Err(e.into())
            }
        }
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        parameter_types(stmt)?
            .iter()
            .map(|t| match t {
                Some(t) => arrow_pg::datatypes::into_pg_type(t),
                None => Ok(Type::UNKNOWN),
            })
            .collect()
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        match result_schema(stmt) {
            Some(schema) => row_fields(
                &schema,
                format.unwrap_or(&Format::UnifiedText),
                Arc::new(FormatOptions::default()),
            ),
            None => Ok(Vec::new()),
        }
    }
}

/// Types of `$1..$n` (`None`: not inferred).
fn parameter_types(stmt: &Prepared) -> Result<Vec<Option<DataType>>, PgError> {
    match &stmt.plan {
        Some(plan) => Ok(crate::query::parameter_types(plan)?),
        None => Ok(Vec::new()),
    }
}

/// The columns a prepared statement returns, or `None` if it returns no rows.
fn result_schema(stmt: &Prepared) -> Option<Schema> {
    if let Some(dml) = &stmt.dml {
        return dml.returning_schema.as_ref().map(|s| s.as_ref().clone());
    }
    match &stmt.command {
        Command::Plan(statement) => {
            let plan = stmt.plan.as_ref()?;
            let schema = match &stmt.columns {
                Some(analyzed) => analyzed.as_ref().clone(),
                None => plan.schema().as_arrow().clone(),
            };
            (super::session::returns_rows(statement) && !schema.fields().is_empty())
                .then_some(schema)
        }
        Command::Show(target) => Some(super::session::show_schema(target)),
        Command::Call(spec) => crate::query::procedures::result_schema(&spec.procedure),
        Command::Cursor(_) => stmt.columns.as_ref().map(|s| s.as_ref().clone()),
        _ => None,
    }
}

/// A statement's Describe answer as PostgreSQL gives it: ParameterDescription, then NoData
/// when the statement returns no rows (whatever its parameters).
struct StatementDescription(DescribeStatementResponse);

impl DescribeResponse for StatementDescription {
    fn parameters(&self) -> Option<&[Type]> {
        self.0.parameters()
    }
    fn fields(&self) -> &[FieldInfo] {
        self.0.fields()
    }
    fn no_data() -> Self {
        StatementDescription(DescribeStatementResponse::no_data())
    }
    fn is_no_data(&self) -> bool {
        self.0.fields().is_empty()
    }
}

#[async_trait]
impl ExtendedQueryHandler for ConnectionHandler {
    type Statement = Prepared;
    type QueryParser = TarnQueryParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::clone(&self.parser)
    }

    /// As pgwire's, with ParseComplete left for the round trip's one flush
    /// (`server::deferred_flush`).
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let parser = self.query_parser();
        match StoredStatement::parse(client, &message, parser).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client
                .portal_store()
                .put_empty_statement(message.name.as_deref().unwrap_or(DEFAULT_NAME)),
        }
        client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// As pgwire's, with BindComplete left for the round trip's one flush.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => client
                .portal_store()
                .put_empty_portal(message.portal_name.as_deref().unwrap_or(DEFAULT_NAME)),
            Some(Entry::Empty) => {
                return Err(PgError::new(
                    "08P01",
                    format!(
                        "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires 0",
                        message.parameters.len()
                    ),
                )
                .into());
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// A SQL cursor is a portal too: Describe of portal `c` after `DECLARE c CURSOR` reports
    /// the cursor's columns (psycopg's named cursors ask this way). The description waits for
    /// the round trip's one flush.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let client = &mut Deferred(client);
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        if message.target_type == TARGET_TYPE_BYTE_PORTAL
            && client.portal_store().get_portal(name).is_none()
        {
            let schema = self
                .session
                .lock()
                .await
                .as_ref()
                .and_then(|s| s.cursor_schema(name));
            if let Some(schema) = schema {
                let fields = row_fields(
                    &schema,
                    &Format::UnifiedText,
                    Arc::new(FormatOptions::default()),
                )?;
                return send_describe_response(client, &DescribePortalResponse::new(fields)).await;
            }
        }
        // pgwire answers a statement with parameters and no result columns (a parameterised
        // INSERT) with an empty RowDescription; PostgreSQL answers NoData. pgjdbc takes the
        // empty RowDescription for a query returning rows and reports 0 as a batch's counts.
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT
            && let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name)
        {
            let described = self.do_describe_statement(client, &stmt).await?;
            return send_describe_response(client, &StatementDescription(described)).await;
        }
        self._on_describe(client, message).await
    }

    /// ReadyForQuery reports the session's transaction state, which pgwire's own bookkeeping
    /// misses in places (e.g. `ROLLBACK TO SAVEPOINT` leaving a failed block).
    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(session) = self.session.lock().await.as_mut() {
            client.set_transaction_status(wire_status(session.tx_state()));
        }
        client.portal_store().rm_portal(DEFAULT_NAME);
        let status = client.transaction_status();
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }

    /// COPY TO STDOUT is sent here (CopyOutResponse, CopyData, CopyDone, `COPY n`); every
    /// other portal runs through pgwire's Execute handling and [`do_query`](Self::do_query).
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal))
                if matches!(portal.statement.statement.command, Command::Copy(_)) =>
            {
                portal
            }
            // Its replies wait for the round trip's one flush (Sync or Flush).
            _ => return self._on_execute(&mut Deferred(client), message).await,
        };
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;
        let prepared = portal.statement.statement.clone();
        let result = match run(session, prepared, None, &Format::UnifiedText, false).await {
            Ok((Reply::CopyIn(start), outcome)) => {
                send_side_messages(client, &outcome).await?;
                send_copy_in(client, start).await?;
                client.set_transaction_status(wire_status(session.tx_state()));
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                return Ok(());
            }
            Ok((reply, outcome)) => {
                send_side_messages(client, &outcome).await?;
                send_response(client, reply).await
            }
            Err(e) => {
                log_failure(session, "(extended protocol)", &e);
                Err(e.into())
            }
        };
        client.set_state(PgWireConnectionState::ReadyForQuery);
        result
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session.lock().await;
        let session = guard.as_mut().ok_or_else(not_started)?;
        let prepared = portal.statement.statement.clone();
        if let Err(e) = deallocate(&*client, &prepared.command) {
            session.note_error();
            return Err(e.into());
        }
        let params = match &prepared.plan {
            Some(_) => {
                let types = parameter_types(&prepared)?;
                Some(super::bind::parameters(portal, &types)?)
            }
            None => None,
        };
        match run(
            session,
            prepared,
            params,
            &portal.result_column_format,
            false,
        )
        .await
        {
            Ok((Reply::Response(response), outcome)) => {
                send_side_messages(client, &outcome).await?;
                Ok(response)
            }
            // COPY portals run in on_execute.
            Ok((Reply::Copy(_) | Reply::CopyIn(_), _)) => {
                Err(PgError::internal("COPY reached do_query").into())
            }
            Err(e) => {
                log_failure(session, "(extended protocol)", &e);
                Err(e.into())
            }
        }
    }
}
