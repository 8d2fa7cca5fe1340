//! Micro-benchmarks of mcpflow's frame codec: decoding a typical `tools/call` request
//! and a 1 MiB result, writing messages with `Message::write_json`, and splitting
//! newline-framed input with `LineReader`.

#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpflow::protocol::CallToolResult;
use mcpflow::protocol::jsonrpc::{self, Decoded, Message, MessageRef, RequestId, to_raw};
use mcpflow::transport::lines::LineReader;

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"},"_meta":{"progressToken":"42"}}}"#;

fn big_response() -> Vec<u8> {
    let result = CallToolResult::text("x".repeat(1024 * 1024));
    let message = Message::response(RequestId::from(7), to_raw(&result).unwrap());
    let mut out = Vec::new();
    message.write_json(&mut out);
    out
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(CALL.len() as u64));
    group.bench_function("tools_call_request", |b| {
        b.iter(|| match jsonrpc::decode(black_box(CALL)) {
            Decoded::Single(Ok(m)) => m,
            _ => panic!("not a message"),
        });
    });
    let big = big_response();
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("result_1mib", |b| {
        b.iter(|| match jsonrpc::decode(black_box(&big)) {
            Decoded::Single(Ok(m)) => m,
            _ => panic!("not a message"),
        });
    });
    group.bench_function("result_1mib_to_call_tool_result", |b| {
        b.iter(|| match jsonrpc::decode(black_box(&big)) {
            Decoded::Single(Ok(MessageRef::Response { result, .. })) => {
                serde_json::from_str::<CallToolResult>(result.get()).unwrap()
            }
            _ => panic!("not a response"),
        });
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("write_json");
    let request = jsonrpc::decode_message(CALL).expect("a message");
    group.bench_function("tools_call_request", |b| {
        let mut out = Vec::with_capacity(256);
        b.iter(|| {
            out.clear();
            black_box(&request).write_json(&mut out);
        });
    });
    let result = CallToolResult::text("x".repeat(1024 * 1024));
    let response = Message::response(RequestId::from(7), to_raw(&result).unwrap());
    group.throughput(Throughput::Bytes(1024 * 1024));
    group.bench_function("result_1mib", |b| {
        let mut out = Vec::with_capacity(2 * 1024 * 1024);
        b.iter(|| {
            out.clear();
            black_box(&response).write_json(&mut out);
        });
    });
    group.bench_function("call_tool_result_1mib_to_raw_and_write", |b| {
        b.iter(|| {
            let raw = to_raw(black_box(&result)).unwrap();
            let mut out = Vec::new();
            Message::response(RequestId::from(7), raw).write_json(&mut out);
            out
        });
    });
    // The text of a large result: serde_json's escaping against `write_json`'s.
    group.bench_function("call_tool_result_1mib_serde_json", |b| {
        let mut out = Vec::with_capacity(2 * 1024 * 1024);
        b.iter(|| {
            out.clear();
            serde_json::to_writer(&mut out, black_box(&result)).unwrap();
        });
    });
    group.bench_function("call_tool_result_1mib_write_json", |b| {
        let mut out = Vec::with_capacity(2 * 1024 * 1024);
        b.iter(|| {
            out.clear();
            black_box(&result).write_json(&mut out).unwrap();
        });
    });
    // Text with escapes: log lines (a newline every 60 bytes) and JSON as text (quotes
    // every few bytes).
    let log = CallToolResult::text(format!("{}\n", "l".repeat(59)).repeat(1024 * 1024 / 60));
    let line = "{\"line\": 42, \"text\": \"hello\tworld\"}\n";
    let json_text = CallToolResult::text(line.repeat(1024 * 1024 / line.len()));
    for (name, result, fast) in [
        ("call_tool_result_1mib_log_serde_json", &log, false),
        ("call_tool_result_1mib_log_write_json", &log, true),
        (
            "call_tool_result_1mib_json_text_serde_json",
            &json_text,
            false,
        ),
        (
            "call_tool_result_1mib_json_text_write_json",
            &json_text,
            true,
        ),
    ] {
        group.bench_function(name, |b| {
            let mut out = Vec::with_capacity(2 * 1024 * 1024);
            b.iter(|| {
                out.clear();
                if fast {
                    black_box(result).write_json(&mut out).unwrap();
                } else {
                    serde_json::to_writer(&mut out, black_box(result)).unwrap();
                }
            });
        });
    }
    group.finish();
}

fn framing(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("line_reader");
    let mut small = Vec::new();
    for _ in 0..1000 {
        small.extend_from_slice(CALL);
        small.push(b'\n');
    }
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("1000_requests", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut reader = LineReader::new(black_box(&small[..]), usize::MAX);
                let mut n = 0;
                while let Some(_frame) = reader.read_frame().await.unwrap() {
                    n += 1;
                }
                n
            })
        });
    });
    let mut big = big_response();
    big.push(b'\n');
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("one_1mib_line", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut reader = LineReader::new(black_box(&big[..]), usize::MAX);
                reader.read_frame().await.unwrap()
            })
        });
    });
    group.finish();
}

criterion_group!(benches, decode, encode, framing);
criterion_main!(benches);
