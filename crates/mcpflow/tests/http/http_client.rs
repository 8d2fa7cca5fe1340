//! The streamable HTTP client transport against scripted axum servers that misbehave on
//! purpose: every failure reaches the waiting caller at once, naming its cause; streams
//! resume with `Last-Event-ID`; expired sessions are replaced; legacy HTTP+SSE servers
//! work; custom headers and bearer tokens arrive.
#![cfg(all(feature = "http-client", feature = "http-server"))]
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;
#[allow(dead_code)]
#[path = "../../examples/conformance_client.rs"]
mod conformance_example;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use common::{bounded, bounded_for};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use mcpflow::client::{Client, ConnectError};
use mcpflow::http::client::{HttpClientBuilder, HttpClientTransport};
use mcpflow::protocol::{CreateMessageResult, LoggingMessageNotificationParams};
use mcpflow::{CloseReason, RequestOptions, SessionError, TransportError};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a failure may take to reach the caller after the fault.
const FAULT: Duration = Duration::from_secs(1);

pub(super) type Reply = Response<Body>;

/// One HTTP request the scripted server received.
#[derive(Clone, Debug)]
pub(super) struct Req {
    pub(super) verb: Method,
    pub(super) uri: Uri,
    headers: HeaderMap,
    pub(super) body: Value,
}

impl Req {
    pub(super) fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }

    fn id(&self) -> Value {
        self.body["id"].clone()
    }

    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn is_post(&self, method: &str) -> bool {
        self.verb == Method::POST && self.rpc() == method
    }
}

pub(super) struct TestServer {
    pub(super) url: String,
    seen: Arc<Mutex<Vec<Req>>>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub(super) fn seen(&self) -> Vec<Req> {
        self.seen.lock().unwrap().clone()
    }

    fn posts(&self, method: &str) -> Vec<Req> {
        self.seen()
            .into_iter()
            .filter(|r| r.is_post(method))
            .collect()
    }

    pub(super) fn count(&self, f: impl Fn(&Req) -> bool) -> usize {
        self.seen().iter().filter(|r| f(r)).count()
    }

    /// Stop accepting and close idle connections; wait until the server is gone.
    async fn shut_down(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        bounded("scripted server shuts down", &mut self.task)
            .await
            .unwrap();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve `handler` for every path on 127.0.0.1; every request is recorded first.
pub(super) async fn serve<F>(handler: F) -> TestServer
where
    F: Fn(Req) -> Reply + Send + Sync + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    let record = seen.clone();
    let app = Router::new().fallback(
        move |verb: Method, uri: Uri, headers: HeaderMap, body: String| {
            let handler = handler.clone();
            let record = record.clone();
            async move {
                let body = serde_json::from_str(&body).unwrap_or(Value::Null);
                let req = Req {
                    verb,
                    uri,
                    headers,
                    body,
                };
                record.lock().unwrap().push(req.clone());
                handler(req)
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    TestServer {
        url,
        seen,
        stop: Some(stop),
        task,
    }
}

fn reply(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body.into())
        .unwrap()
}

fn json_reply(value: Value) -> Reply {
    reply(StatusCode::OK, "application/json", value.to_string())
}

fn with_session(mut reply: Reply, session: &str) -> Reply {
    reply
        .headers_mut()
        .insert("mcp-session-id", session.parse().unwrap());
    reply
}

pub(super) fn status(code: u16, text: &str) -> Reply {
    reply(
        StatusCode::from_u16(code).unwrap(),
        "text/plain",
        text.to_owned(),
    )
}

/// An event stream of `events`, then (when `hold`) open until the client goes away.
fn sse(events: Vec<String>, hold: bool) -> Reply {
    let head = stream::iter(events.into_iter().map(Ok::<_, Infallible>));
    let body: BoxStream<'static, Result<String, Infallible>> = if hold {
        head.chain(stream::pending()).boxed()
    } else {
        head.boxed()
    };
    reply(StatusCode::OK, "text/event-stream", Body::from_stream(body))
}

/// An event stream fed by a channel; it ends when the sender is dropped.
fn sse_channel(rx: mpsc::UnboundedReceiver<String>) -> Reply {
    let body = stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    reply(StatusCode::OK, "text/event-stream", Body::from_stream(body))
}

fn event(message: &Value) -> String {
    format!("data: {message}\n\n")
}

fn event_with_id(id: &str, message: &Value) -> String {
    format!("id: {id}\ndata: {message}\n\n")
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn text_result(id: Value, text: &str) -> Value {
    result(id, json!({"content": [{"type": "text", "text": text}]}))
}

fn progress(token: &Value, n: u32) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
           "params": {"progressToken": token, "progress": n, "total": 2}})
}

fn initialize_result(req: &Req) -> Value {
    let version = req.body["params"]["protocolVersion"].clone();
    result(
        req.id(),
        json!({"protocolVersion": version, "capabilities": {"tools": {}},
               "serverInfo": {"name": "scripted", "version": "0"}}),
    )
}

/// What a plain streamable server answers: `initialize` (with `session`), 202 for
/// notifications and responses, `ping`, an empty tool list, 405 for GET, 200 for DELETE.
pub(super) fn standard(req: &Req, session: Option<&str>) -> Reply {
    match req.verb {
        Method::GET => status(405, "no standalone stream"),
        Method::DELETE => status(200, ""),
        _ if req.rpc() == "initialize" => {
            let reply = json_reply(initialize_result(req));
            match session {
                Some(s) => with_session(reply, s),
                None => reply,
            }
        }
        _ if req.id().is_null() || req.rpc().is_empty() => status(202, ""),
        _ if req.rpc() == "ping" => json_reply(result(req.id(), json!({}))),
        _ if req.rpc() == "tools/list" => json_reply(result(req.id(), json!({"tools": []}))),
        _ => json_reply(json!({"jsonrpc": "2.0", "id": req.id(),
                               "error": {"code": -32601, "message": "no such method"}})),
    }
}

pub(super) fn builder(server: &TestServer) -> HttpClientBuilder {
    HttpClientTransport::builder(&server.url)
}

pub(super) async fn connect(builder: HttpClientBuilder) -> Client {
    connect_with(Client::builder("test", "1.0"), builder).await
}

async fn connect_with(
    client: mcpflow::client::ClientBuilder,
    builder: HttpClientBuilder,
) -> Client {
    let transport = builder.build().unwrap();
    bounded("client connects over HTTP", client.connect(transport))
        .await
        .unwrap()
}

/// The transport error a failed call carries.
pub(super) fn http_error(error: &SessionError) -> (&'static str, Option<u16>, String) {
    match error {
        SessionError::Transport {
            error:
                TransportError::Http {
                    context,
                    status,
                    detail,
                },
            ..
        } => (context, *status, detail.clone()),
        other => panic!("expected an HTTP transport error, got {other:?}"),
    }
}

/// A full session: JSON and SSE answers, progress before the result, a sampling request
/// on the POST stream answered by POST, a log on the standalone stream, and the session
/// id and protocol version on every request after `initialize`.
#[tokio::test]
async fn happy_path_over_json_and_event_streams() {
    let (answer_tx, answer_rx) = oneshot::channel::<String>();
    let answer_tx = Mutex::new(Some(answer_tx));
    let answer_rx = Mutex::new(Some(answer_rx));
    let server = serve(move |req| {
        if req.verb == Method::GET {
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "hello from GET"}});
            return sse(vec![event_with_id("g1", &log)], true);
        }
        if req.is_post("tools/list") {
            let tools = json!({"tools": [{"name": "add", "inputSchema": {"type": "object"}}]});
            return sse(vec![event(&result(req.id(), tools))], false);
        }
        if req.is_post("tools/call") {
            let token = req.body["params"]["_meta"]["progressToken"].clone();
            let id = req.id();
            let answer = answer_rx.lock().unwrap().take().unwrap();
            let sampling = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage",
                "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                           "maxTokens": 5}});
            let first = stream::iter(vec![
                event(&progress(&token, 1)),
                event(&progress(&token, 2)),
                event(&sampling),
            ]);
            let last = stream::once(async move {
                let sampled = answer.await.unwrap_or_default();
                event(&text_result(id, &format!("sum is 3 and {sampled}")))
            });
            let body = first.chain(last).map(Ok::<_, Infallible>);
            return reply(StatusCode::OK, "text/event-stream", Body::from_stream(body));
        }
        if req.verb == Method::POST && req.id() == json!("srv-1") {
            let text = req.body["result"]["content"]["text"].as_str().unwrap_or("?");
            if let Some(tx) = answer_tx.lock().unwrap().take() {
                let _ = tx.send(text.to_owned());
            }
            return status(202, "");
        }
        standard(&req, Some("s-1"))
    })
    .await;

    let (log_tx, mut log_rx) = mpsc::unbounded_channel();
    let client = Client::builder("test", "1.0")
        .on_sampling(|_params, _client| async {
            Ok(CreateMessageResult::assistant_text("model", "sampled!"))
        })
        .on_log(move |params: LoggingMessageNotificationParams, _client| {
            let _ = log_tx.send(params.data);
            async {}
        });
    let client = connect_with(client, builder(&server)).await;

    let tools = bounded("tools/list over SSE", client.list_all_tools())
        .await
        .unwrap();
    assert_eq!(tools[0].name, "add");

    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen_reports = reports.clone();
    let options =
        RequestOptions::new().on_progress(move |p| seen_reports.lock().unwrap().push(p.progress));
    let params = mcpflow::protocol::CallToolRequestParams::new("add");
    let result = bounded(
        "tools/call with progress and sampling",
        client.call_tool_with(&params, options),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("sum is 3 and sampled!"));
    assert_eq!(*reports.lock().unwrap(), vec![1.0, 2.0]);
    let log = bounded("log on the standalone stream", log_rx.recv())
        .await
        .unwrap();
    assert_eq!(log, json!("hello from GET"));

    let init = &server.posts("initialize")[0];
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("content-type"), Some("application/json"));
    let accept = init.header("accept").unwrap();
    assert!(accept.contains("application/json") && accept.contains("text/event-stream"));
    let call = &server.posts("tools/call")[0];
    assert_eq!(call.header("mcp-session-id"), Some("s-1"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-11-25"));
    let get = server
        .seen()
        .into_iter()
        .find(|r| r.verb == Method::GET)
        .unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
    assert_eq!(get.header("last-event-id"), None);
    bounded("close", client.close()).await;
}

/// An error status fails the request at once with the status and the start of the
/// body; the connection stays usable.
#[tokio::test]
async fn http_error_status_fails_the_request_with_status_and_body() {
    let server = serve(|req| {
        if req.is_post("tools/call") {
            return reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "database exploded",
            );
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server)).await;
    let error = bounded_for(
        FAULT,
        "the 500 reaches the caller",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap_err();
    let (context, status, detail) = http_error(&error);
    assert_eq!((context, status), ("POST", Some(500)));
    assert!(detail.contains("database exploded"), "{detail}");
    assert!(error.to_string().contains("status 500"), "{error}");
    bounded("ping after the failure", client.ping())
        .await
        .unwrap();
}

/// An event stream that ends before the answer, with no event id to resume from, fails
/// the request at once.
#[tokio::test]
async fn stream_ended_without_event_id_fails_the_request() {
    let server = serve(|req| {
        if req.is_post("tools/call") {
            let token = req.body["params"]["_meta"]["progressToken"].clone();
            return sse(vec![event(&progress(&token, 1))], false);
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server)).await;
    let error = bounded_for(
        FAULT,
        "the early end reaches the caller",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap_err();
    let (_, status, detail) = http_error(&error);
    assert_eq!(status, None);
    assert!(detail.contains("closed the event stream"), "{detail}");
    assert!(detail.contains("no event id"), "{detail}");
}

/// When every reconnect attempt fails, the request fails naming the attempts and the
/// last answer.
#[tokio::test]
async fn exhausted_reconnects_fail_the_request() {
    let server = serve(|req| {
        if req.is_post("tools/call") {
            return sse(vec!["id: e1\nretry: 10\ndata: \n\n".to_owned()], false);
        }
        if req.verb == Method::GET && req.header("last-event-id").is_some() {
            return status(503, "try again later");
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server).max_reconnects(2)).await;
    let error = bounded_for(
        FAULT + Duration::from_millis(20),
        "exhausted reconnects reach the caller",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap_err();
    let (context, status, detail) = http_error(&error);
    assert_eq!((context, status), ("reconnect", Some(503)));
    assert!(
        detail.contains("gave up after 2 reconnect attempts"),
        "{detail}"
    );
    assert!(detail.contains("try again later"), "{detail}");
    let resumes =
        server.count(|r| r.verb == Method::GET && r.header("last-event-id") == Some("e1"));
    assert_eq!(resumes, 2);
}

/// A server that is not there: the handshake fails at once, naming the refusal.
#[tokio::test]
async fn refused_connection_fails_at_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let transport = HttpClientTransport::new(url).unwrap();
    let error = bounded_for(
        FAULT,
        "the refusal reaches the caller",
        Client::builder("test", "1.0").connect(transport),
    )
    .await
    .unwrap_err();
    let ConnectError::Initialize(error) = error else {
        panic!("expected a failed initialize, got {error:?}");
    };
    let (context, status, detail) = http_error(&error);
    assert_eq!((context, status), ("POST", None));
    assert!(detail.to_lowercase().contains("refused"), "{detail}");
}

/// The server goes away in the middle of a session: the next request fails promptly.
#[tokio::test]
async fn server_gone_mid_session_fails_requests_promptly() {
    let server = serve(|req| standard(&req, Some("s-1"))).await;
    let client = connect(builder(&server)).await;
    bounded("ping while the server is up", client.ping())
        .await
        .unwrap();
    server.shut_down().await;
    let error = bounded_for(FAULT, "the dead server reaches the caller", client.ping())
        .await
        .unwrap_err();
    let (context, _, detail) = http_error(&error);
    assert_eq!(context, "POST");
    assert!(detail.contains("could not send `ping`"), "{detail}");
}

/// A connection broken in the middle of an event stream (after an event arrived) fails
/// the request at once.
#[tokio::test]
async fn connection_reset_mid_stream_fails_the_request() {
    let (break_tx, break_rx) = oneshot::channel::<()>();
    let break_rx = Mutex::new(Some(break_rx));
    let server = serve(move |req| {
        if req.is_post("tools/call") {
            let token = req.body["params"]["_meta"]["progressToken"].clone();
            let plug = break_rx.lock().unwrap().take().unwrap();
            let first = stream::iter(vec![Ok(event(&progress(&token, 1)))]);
            let broken = stream::once(async move {
                let _ = plug.await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "pulled the plug",
                ))
            });
            return reply(
                StatusCode::OK,
                "text/event-stream",
                Body::from_stream(first.chain(broken)),
            );
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server)).await;
    let params = mcpflow::protocol::CallToolRequestParams::new("x");
    let mut call = bounded(
        "start the call",
        client.start_call_tool(&params, RequestOptions::new()),
    )
    .await
    .unwrap();
    let first = bounded("progress arrives", call.next_event()).await;
    assert!(
        matches!(first, Some(mcpflow::session::RequestEvent::Progress(_))),
        "{first:?}"
    );
    break_tx.send(()).unwrap();
    let outcome = bounded_for(FAULT, "the reset reaches the caller", call.next_event()).await;
    let Some(mcpflow::session::RequestEvent::Done(Err(error))) = outcome else {
        panic!("expected the call to fail, got {outcome:?}");
    };
    let (context, _, detail) = http_error(&error);
    assert_eq!(context, "POST stream");
    assert!(detail.contains("the event stream failed"), "{detail}");
}

/// An event stream that stays open but silent fails the request after the idle limit.
#[tokio::test]
async fn idle_event_stream_fails_the_request() {
    let server = serve(|req| {
        if req.is_post("tools/call") {
            return sse(vec!["id: p1\ndata: \n\n".to_owned()], true);
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server).sse_idle_timeout(Duration::from_millis(200))).await;
    let error = bounded_for(
        Duration::from_millis(1500),
        "the silent stream reaches the caller",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap_err();
    let (_, _, detail) = http_error(&error);
    assert!(detail.contains("no bytes on the event stream"), "{detail}");
    assert!(detail.contains("sse_idle_timeout"), "{detail}");
}

/// A stream closed in the middle of a call is resumed with `GET` and `Last-Event-ID`
/// (the id of the last event seen), and the result arrives on the resumed stream.
#[tokio::test]
async fn resumes_with_last_event_id_after_the_stream_closes_mid_call() {
    let pending = Arc::new(Mutex::new(Value::Null));
    let call_id = pending.clone();
    let server = serve(move |req| {
        if req.is_post("tools/call") {
            let token = req.body["params"]["_meta"]["progressToken"].clone();
            *call_id.lock().unwrap() = req.id();
            return sse(
                vec![
                    "id: e1\nretry: 10\ndata: \n\n".to_owned(),
                    event_with_id("e2", &progress(&token, 1)),
                ],
                false,
            );
        }
        if req.verb == Method::GET && req.header("last-event-id").is_some() {
            let id = call_id.lock().unwrap().clone();
            return sse(vec![event_with_id("e3", &text_result(id, "resumed"))], true);
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server)).await;
    let result = bounded(
        "the result arrives after resuming",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("resumed"));
    let resume = server
        .seen()
        .into_iter()
        .find(|r| r.verb == Method::GET && r.header("last-event-id").is_some())
        .unwrap();
    assert_eq!(resume.header("last-event-id"), Some("e2"));
    assert_eq!(resume.header("mcp-session-id"), Some("s-1"));
}

/// A 404 for the session id means it expired: the transport initializes a new session
/// with the original `initialize`, and the request goes through on it.
#[tokio::test]
async fn reinitializes_transparently_on_404() {
    let sessions = Arc::new(AtomicUsize::new(0));
    let server = serve(move |req| {
        if req.is_post("initialize") {
            let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
            return with_session(json_reply(initialize_result(&req)), &format!("s-{n}"));
        }
        if req.is_post("tools/call") {
            if req.header("mcp-session-id") == Some("s-1") {
                return status(404, "session not found");
            }
            return json_reply(text_result(req.id(), "on the new session"));
        }
        standard(&req, None)
    })
    .await;
    let client = connect(builder(&server)).await;
    let result = bounded(
        "the call goes through after re-initializing",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("on the new session"));

    let inits = server.posts("initialize");
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[1].body, inits[0].body);
    assert_eq!(inits[1].header("mcp-session-id"), None);
    let initialized = server.posts("notifications/initialized");
    assert_eq!(initialized.len(), 2);
    assert_eq!(initialized[1].header("mcp-session-id"), Some("s-2"));
    let calls = server.posts("tools/call");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].header("mcp-session-id"), Some("s-2"));
    assert_eq!(calls[1].header("mcp-protocol-version"), Some("2025-11-25"));
    bounded("ping on the new session", client.ping())
        .await
        .unwrap();
}

/// Without re-initializing, an expired session fails the request with an error naming it.
#[tokio::test]
async fn expired_session_fails_clearly_when_not_reinitializing() {
    let server = serve(|req| {
        if req.is_post("tools/call") {
            return status(404, "session not found");
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server).reinitialize_on_404(false)).await;
    let error = bounded_for(
        FAULT,
        "the expiry reaches the caller",
        client.call_tool("x", json!({})),
    )
    .await
    .unwrap_err();
    let (_, status, detail) = http_error(&error);
    assert_eq!(status, Some(404));
    assert!(detail.contains("session `s-1` expired"), "{detail}");
    assert!(detail.contains("reinitialize_on_404"), "{detail}");
    assert_eq!(server.posts("initialize").len(), 1);
}

/// A legacy HTTP+SSE server: the stream, its endpoint event, POSTs answered 202 and
/// answers on the stream.
fn legacy_server(
    stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
    drop_stream_on_call: bool,
) -> impl Fn(Req) -> Reply + Send + Sync + 'static {
    move |req| {
        if req.uri.path() == "/mcp" {
            if req.verb == Method::GET {
                let (tx, rx) = mpsc::unbounded_channel();
                let _ = tx.send("event: endpoint\ndata: /messages?sessionId=abc\n\n".to_owned());
                *stream.lock().unwrap() = Some(tx);
                return sse_channel(rx);
            }
            return status(405, "only the HTTP+SSE transport here");
        }
        let answer = match req.rpc() {
            "initialize" => Some(initialize_result(&req)),
            "tools/list" => Some(result(
                req.id(),
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            )),
            "tools/call" if drop_stream_on_call => {
                stream.lock().unwrap().take();
                None
            }
            "tools/call" => Some(text_result(req.id(), "legacy echo")),
            _ => None,
        };
        if let (Some(answer), Some(tx)) = (answer, stream.lock().unwrap().as_ref()) {
            let _ = tx.send(format!("event: message\ndata: {answer}\n\n"));
        }
        status(202, "Accepted")
    }
}

/// A server that refuses the initialize POST with 405 is spoken to over HTTP+SSE.
#[tokio::test]
async fn legacy_sse_fallback_end_to_end() {
    let server = serve(legacy_server(Arc::default(), false)).await;
    let client = connect(builder(&server)).await;
    assert_eq!(client.server_info().server_info.name, "scripted");
    // The kept list, which the call's output check then uses: one tools/list in all.
    let tools = bounded("tools/list over HTTP+SSE", client.tools())
        .await
        .unwrap();
    assert_eq!(tools[0].name, "echo");
    let result = bounded(
        "tools/call over HTTP+SSE",
        client.call_tool("echo", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("legacy echo"));
    let posted: Vec<Req> = server
        .seen()
        .into_iter()
        .filter(|r| r.verb == Method::POST && r.uri.path() == "/messages")
        .collect();
    assert!(
        posted
            .iter()
            .all(|r| r.uri.query() == Some("sessionId=abc"))
    );
    let methods: Vec<&str> = posted.iter().map(Req::rpc).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    bounded("close", client.close()).await;
    assert_eq!(server.count(|r| r.verb == Method::DELETE), 0);
}

/// When the legacy event stream ends, the connection ends and pending requests fail
/// at once, naming the closed stream.
#[tokio::test]
async fn legacy_stream_end_fails_pending_requests() {
    let server = serve(legacy_server(Arc::default(), true)).await;
    let client = connect(builder(&server)).await;
    let error = bounded_for(
        FAULT,
        "the closed stream reaches the caller",
        client.call_tool("echo", json!({})),
    )
    .await
    .unwrap_err();
    let SessionError::Closed {
        reason:
            CloseReason::Transport(TransportError::Http {
                context, detail, ..
            }),
        ..
    } = &error
    else {
        panic!("expected the connection to close with the stream's error, got {error:?}");
    };
    assert_eq!(*context, "legacy SSE stream");
    assert!(
        detail.contains("closed the HTTP+SSE event stream"),
        "{detail}"
    );
}

/// Custom headers and the bearer token (asked for anew per request) are on every
/// request: POSTs and the standalone GET.
#[tokio::test]
async fn custom_header_and_bearer_token_arrive() {
    let server = serve(|req| standard(&req, Some("s-1"))).await;
    let tokens = Arc::new(AtomicUsize::new(0));
    let transport = builder(&server)
        .header("x-api-key", "k-123")
        .bearer_token(move || {
            let n = tokens.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Some(format!("tok-{n}")) }
        });
    let client = connect(transport).await;
    bounded("ping", client.ping()).await.unwrap();
    bounded("close", client.close()).await;
    let seen = server.seen();
    assert!(seen.iter().any(|r| r.verb == Method::GET));
    assert!(seen.iter().any(|r| r.verb == Method::DELETE));
    for req in &seen {
        assert_eq!(req.header("x-api-key"), Some("k-123"), "{req:?}");
        assert!(
            req.header("authorization")
                .unwrap()
                .starts_with("Bearer tok-"),
            "{req:?}"
        );
    }
    let mut tokens: Vec<&str> = seen
        .iter()
        .filter_map(|r| r.header("authorization"))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), seen.len(), "one token per request");
}

/// A server answering a notification with `200 {"jsonrpc":"2.0","result":{}}` (no id)
/// and refusing the GET stream with 400, as the conformance runner does, is fine.
#[tokio::test]
async fn result_without_id_for_a_notification_is_tolerated() {
    let server = serve(|req| {
        if req.verb == Method::POST && req.id().is_null() {
            return json_reply(json!({"jsonrpc": "2.0", "result": {}}));
        }
        if req.verb == Method::GET {
            return status(400, "parse error");
        }
        standard(&req, None)
    })
    .await;
    let client = connect(builder(&server)).await;
    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .unwrap();
    assert!(tools.is_empty());
    bounded("ping", client.ping()).await.unwrap();
}

/// Close ends the session with `DELETE` carrying the session id.
#[tokio::test]
async fn close_sends_delete_with_the_session_id() {
    let server = serve(|req| standard(&req, Some("s-9"))).await;
    let client = connect(builder(&server)).await;
    bounded("close", client.close()).await;
    let delete = server
        .seen()
        .into_iter()
        .find(|r| r.verb == Method::DELETE)
        .unwrap();
    assert_eq!(delete.header("mcp-session-id"), Some("s-9"));
}

/// Frames are POSTed in the order the session sent them: a burst of notifications
/// queued without waiting arrives in order, before the request queued after them.
#[tokio::test]
async fn posts_keep_the_order_frames_were_sent() {
    let server = serve(|req| standard(&req, Some("s-1"))).await;
    let client = connect(builder(&server)).await;
    for n in 0..10 {
        bounded(
            "queue a notification",
            client
                .peer()
                .notify_raw("notifications/test", Some(&json!({"n": n}))),
        )
        .await
        .unwrap();
    }
    bounded("ping after the burst", client.ping())
        .await
        .unwrap();
    let order: Vec<Value> = server
        .seen()
        .into_iter()
        .filter(|r| r.rpc() == "notifications/test" || r.rpc() == "ping")
        .map(|r| r.body["params"]["n"].clone())
        .collect();
    let mut expected: Vec<Value> = (0..10).map(|n| json!(n)).collect();
    expected.push(Value::Null);
    assert_eq!(order, expected);
}

/// The conformance example's `tools_call` scenario calls `add_numbers` with 5 and 3.
#[tokio::test]
async fn conformance_example_calls_add_numbers() {
    let server = serve(|req| {
        if req.is_post("tools/list") {
            let tools = json!({"tools": [{"name": "add_numbers", "inputSchema": {"type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]});
            return json_reply(result(req.id(), tools));
        }
        if req.is_post("tools/call") {
            let sum = req.body["params"]["arguments"]["a"].as_i64().unwrap_or(0)
                + req.body["params"]["arguments"]["b"].as_i64().unwrap_or(0);
            return sse(vec![event(&text_result(req.id(), &format!("{sum}")))], false);
        }
        standard(&req, None)
    })
    .await;
    bounded(
        "the tools_call scenario",
        conformance_example::conformance::run(&server.url, "tools_call"),
    )
    .await
    .unwrap();
    let call = &server.posts("tools/call")[0];
    assert_eq!(call.body["params"]["name"], "add_numbers");
    assert_eq!(call.body["params"]["arguments"], json!({"a": 5, "b": 3}));
}

/// The conformance example's elicitation scenario accepts with every schema default
/// filled in (SEP-1034), answering the request that arrives on the tool call's stream.
#[tokio::test]
async fn conformance_example_answers_elicitation_with_defaults() {
    let (content_tx, content_rx) = oneshot::channel::<Value>();
    let content_tx = Mutex::new(Some(content_tx));
    let content_rx = Mutex::new(Some(content_rx));
    let received = Arc::new(Mutex::new(Value::Null));
    let record = received.clone();
    let server = serve(move |req| {
        if req.is_post("tools/list") {
            let tools = json!({"tools": [{"name": "test_client_elicitation_defaults",
                "inputSchema": {"type": "object", "properties": {}, "required": []}}]});
            return json_reply(result(req.id(), tools));
        }
        if req.is_post("tools/call") {
            let elicit = json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
                "params": {"message": "defaults please", "requestedSchema": {"type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                        "verified": {"type": "boolean", "default": true},
                        "nickname": {"type": "string"}}}}});
            let id = req.id();
            let answer = content_rx.lock().unwrap().take().unwrap();
            let body = stream::iter(vec![event(&elicit)]).chain(stream::once(async move {
                let content = answer.await.unwrap_or_default();
                event(&text_result(id, &content.to_string()))
            }));
            return reply(
                StatusCode::OK,
                "text/event-stream",
                Body::from_stream(body.map(Ok::<_, Infallible>)),
            );
        }
        if req.verb == Method::POST && req.id() == json!("e-1") {
            *record.lock().unwrap() = req.body["result"].clone();
            if let Some(tx) = content_tx.lock().unwrap().take() {
                let _ = tx.send(req.body["result"]["content"].clone());
            }
            return status(202, "");
        }
        standard(&req, Some("s-1"))
    })
    .await;
    bounded(
        "the elicitation scenario",
        conformance_example::conformance::run(&server.url, "elicitation-sep1034-client-defaults"),
    )
    .await
    .unwrap();
    let answer = received.lock().unwrap().clone();
    assert_eq!(answer["action"], "accept");
    assert_eq!(
        answer["content"],
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
    let init = &server.posts("initialize")[0];
    assert_eq!(init.body["params"]["protocolVersion"], "2025-11-25");
    assert!(init.body["params"]["capabilities"]["elicitation"].is_object());
}
