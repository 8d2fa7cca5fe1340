//! One trace across SDKs: the official Python SDK 2.x client (traced by
//! OpenTelemetry's Python SDK, `interop/peers/otel_peer.py`) calls `mcpflow serve
//! everything` over stdio and HTTP in both eras, and mcpflow's server span, exported
//! over OTLP/HTTP to a receiver in this test that decodes the official protobuf
//! definitions, shares the Python span's trace and names it as parent; then
//! `mcpflow call` against the Python server, the other way round. The peers come from
//! `.peers/` (scripts/install-peers.sh), so these tests are ignored by default and run
//! by interop/run-matrix.sh. Every wait is bounded.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::Value;
use tokio::sync::watch;

use crate::common::{BIN, HttpServe, ScratchDir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn peers() -> PathBuf {
    std::env::var_os("MCPFLOW_PEERS").map_or_else(|| root().join(".peers"), PathBuf::from)
}

fn python() -> PathBuf {
    let python = peers().join("py2/bin/python");
    assert!(
        python.exists(),
        "{} is missing; run scripts/install-peers.sh",
        python.display()
    );
    python
}

/// A span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Received {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    /// OTLP's `SpanKind`: 2 server, 3 client.
    kind: i32,
    attributes: Vec<(String, String)>,
}

#[derive(Default)]
struct Collected {
    spans: Vec<Received>,
    metrics: Vec<String>,
}

/// An OTLP/HTTP receiver (`/v1/traces`, `/v1/metrics`, protobuf) on a loopback port.
struct Receiver {
    url: String,
    /// What arrived so far; each export wakes the waits.
    collected: watch::Sender<Collected>,
}

impl Receiver {
    async fn start() -> Receiver {
        let collected = watch::Sender::new(Collected::default());
        async fn traces(State(c): State<watch::Sender<Collected>>, body: Bytes) -> Vec<u8> {
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
            c.send_modify(|c| {
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        for span in scope.spans {
                            c.spans.push(Received {
                                trace_id: hex(&span.trace_id),
                                span_id: hex(&span.span_id),
                                parent_span_id: hex(&span.parent_span_id),
                                name: span.name,
                                kind: span.kind,
                                attributes: span
                                    .attributes
                                    .into_iter()
                                    .map(|kv| (kv.key, format!("{:?}", kv.value)))
                                    .collect(),
                            });
                        }
                    }
                }
            });
            Vec::new()
        }
        async fn metrics(State(c): State<watch::Sender<Collected>>, body: Bytes) -> Vec<u8> {
            let request =
                ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
            c.send_modify(|c| {
                for resource in request.resource_metrics {
                    for scope in resource.scope_metrics {
                        c.metrics.extend(scope.metrics.into_iter().map(|m| m.name));
                    }
                }
            });
            Vec::new()
        }
        let app = axum::Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(collected.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, collected }
    }

    /// The environment that points mcpflow's exporter here, exporting at once.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", self.url.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_owned()),
            ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_owned()),
        ]
    }

    /// Wait, at most 15 s, until `find` finds something in what arrived.
    async fn until<T>(&self, what: &str, mut find: impl FnMut(&Collected) -> Option<T>) -> T {
        let mut found = None;
        let mut arrived = self.collected.subscribe();
        let _ = tokio::time::timeout(
            Duration::from_secs(15),
            arrived.wait_for(|c| {
                found = find(c);
                found.is_some()
            }),
        )
        .await;
        found.unwrap_or_else(|| {
            panic!(
                "{what}: not at the receiver within 15 s; it has {:#?}",
                self.collected.borrow().spans
            )
        })
    }

    /// Wait, at most 15 s, for a span that `matches`.
    async fn span(&self, what: &str, matches: impl Fn(&Received) -> bool) -> Received {
        self.until(what, |c| c.spans.iter().find(|s| matches(s)).cloned())
            .await
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Python spans of `file`, one JSON object per line.
fn python_spans(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Run `program ARGS` with `env` to its end, at most 60 s; its stdout.
async fn run(program: &Path, args: &[String], env: &[(&str, String)], what: &str) -> String {
    let child = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the peer");
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what}: still running after 60 s"))
        .expect("the peer's output");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what}: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The Python client calls `test_tool_with_progress` on mcpflow (over `place`: a URL,
/// or the command after `--`); mcpflow's server span continues its client span.
async fn python_client_to_mcpflow(receiver: &Receiver, mode: &str, place: &[String], cell: &str) {
    let dir = ScratchDir::new(&format!("otel-{cell}"));
    let spans_file = dir.join("python-spans.jsonl");
    let mut args = vec![
        root()
            .join("interop/peers/otel_peer.py")
            .display()
            .to_string(),
        spans_file.display().to_string(),
        root().join("interop/peers/client.py").display().to_string(),
        "--mode".into(),
        mode.into(),
        "--progress".into(),
        "test_tool_with_progress".into(),
        "--log=".into(),
        "--change=".into(),
        "--sampling=".into(),
    ];
    args.extend(place.iter().cloned());
    let out = run(&python(), &args, &[], cell).await;
    let line: Value = out
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{cell}: no JSON line from the client: {out}"));
    assert_eq!(line["ok"], true, "{cell}: {line}");
    let spans = python_spans(&spans_file);
    let sent = spans
        .iter()
        .find(|s| s["kind"] == "CLIENT" && s["attributes"]["mcp.method.name"] == "tools/call")
        .unwrap_or_else(|| panic!("{cell}: the Python client's tools/call span among {spans:#?}"));
    let trace = sent["trace_id"].as_str().unwrap().to_owned();
    let parent = sent["span_id"].as_str().unwrap().to_owned();
    let served = receiver
        .span(cell, |s| {
            s.kind == 2 && s.name == "tools/call test_tool_with_progress" && s.trace_id == trace
        })
        .await;
    assert_eq!(served.parent_span_id, parent, "{cell}: {served:#?}");
    let attribute = |key: &str| {
        served
            .attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    assert!(
        attribute("gen_ai.tool.name").is_some_and(|v| v.contains("test_tool_with_progress")),
        "{cell}: {served:#?}"
    );
    assert!(
        attribute("mcp.protocol.version").is_some(),
        "{cell}: {served:#?}"
    );
    if cell.starts_with("http") {
        assert!(
            attribute("network.transport").is_some_and(|v| v.contains("tcp")),
            "{cell}: {served:#?}"
        );
    }
    if cell == "http-legacy" {
        assert!(attribute("mcp.session.id").is_some(), "{cell}: {served:#?}");
    }
    println!(
        "{cell}: mcpflow's server span {} is a child of the Python span {parent}",
        served.span_id
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official SDK peers in .peers/; run by interop/run-matrix.sh"]
async fn python_client_traces_continue_into_mcpflow() {
    let receiver = Receiver::start().await;
    let env: Vec<String> = receiver
        .env()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for mode in ["legacy", "auto"] {
        // The Python SDK passes a stdio server only a few variables of its own: `env`
        // hands the exporter's to mcpflow.
        let mut stdio = vec!["--".to_owned(), "env".to_owned()];
        stdio.extend(env.iter().cloned());
        stdio.extend([BIN.to_owned(), "serve".into(), "everything".into()]);
        python_client_to_mcpflow(&receiver, mode, &stdio, &format!("stdio-{mode}")).await;

        let pairs: Vec<(&str, String)> = receiver.env();
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = HttpServe::start_with(&[], &pairs);
        let place = vec!["--url".to_owned(), server.url.clone()];
        python_client_to_mcpflow(&receiver, mode, &place, &format!("http-{mode}")).await;
        drop(server);
    }
    // The server's duration histograms are exported too.
    receiver
        .until("the server's duration metrics", |c| {
            [
                "mcp.server.operation.duration",
                "mcp.server.session.duration",
            ]
            .iter()
            .all(|m| c.metrics.iter().any(|n| n == m))
            .then_some(())
        })
        .await;
}

/// A Python server peer, traced into `spans_file`: its command after `--` for stdio, or
/// started here on a free port for HTTP (killed when dropped).
struct PythonServer {
    _child: Option<tokio::process::Child>,
    place: Vec<String>,
}

async fn python_server(script: &str, spans_file: &Path, http: bool) -> PythonServer {
    let command = [
        python().display().to_string(),
        root()
            .join("interop/peers/otel_peer.py")
            .display()
            .to_string(),
        spans_file.display().to_string(),
        root()
            .join("interop/peers")
            .join(script)
            .display()
            .to_string(),
    ];
    if !http {
        let place = std::iter::once("--".to_owned()).chain(command).collect();
        return PythonServer {
            _child: None,
            place,
        };
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .args(["--http-port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python server");
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the Python {script} did not accept connections on port {port} within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    PythonServer {
        _child: Some(child),
        place: vec!["--url".to_owned(), format!("http://127.0.0.1:{port}/mcp")],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the official SDK peers in .peers/; run by interop/run-matrix.sh"]
async fn mcpflow_client_traces_continue_into_the_python_server() {
    let receiver = Receiver::start().await;
    for (era, script) in [
        ("handshake", "server.py"),
        ("per-request", "server_per_request.py"),
    ] {
        for http in [false, true] {
            let cell = format!("{}-{era}", if http { "http" } else { "stdio" });
            let dir = ScratchDir::new(&format!("otel-server-{cell}"));
            let spans_file = dir.join("python-spans.jsonl");
            let server = python_server(script, &spans_file, http).await;
            let mut args: Vec<String> = [
                "call",
                "--json",
                "--era",
                era,
                "--timeout",
                "20",
                "echo",
                r#"{"text":"traced"}"#,
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            args.extend(server.place.iter().cloned());
            let out = run(Path::new(BIN), &args, &receiver.env(), &cell).await;
            assert!(out.contains("traced"), "{cell}: {out}");
            let sent = receiver
                .span(&cell, |s| s.kind == 3 && s.name == "tools/call echo")
                .await;
            let started = Instant::now();
            let served = loop {
                let spans = python_spans(&spans_file);
                if let Some(span) = spans
                    .iter()
                    .find(|s| s["kind"] == "SERVER" && s["trace_id"] == sent.trace_id.as_str())
                {
                    break span.clone();
                }
                assert!(
                    started.elapsed() < Duration::from_secs(15),
                    "{cell}: a Python server span in mcpflow's trace {}: {spans:#?}",
                    sent.trace_id
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            assert_eq!(
                served["parent_span_id"],
                sent.span_id.as_str(),
                "{cell}: {served}"
            );
            println!(
                "{cell}: the Python server span {} is a child of mcpflow's span {}",
                served["span_id"], sent.span_id
            );
            drop(server);
            // Spans of one run only: the next call starts a trace of its own.
            receiver.collected.send_modify(|c| c.spans.clear());
        }
    }
}
