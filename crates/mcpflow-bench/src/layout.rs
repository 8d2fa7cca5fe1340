//! How a client lays out the requests it writes: each system's own client, or the
//! no-SDK client writing the same requests in mcpflow's or the TypeScript SDK's byte
//! layout.

use serde::Serialize;

use crate::baseline::{Outbound, encode};

/// Who writes the requests a server answers, and in which key order.
///
/// `Sdk` is each system's own client. The other two are the no-SDK client writing
/// the same requests in two byte layouts, so a server's cells can be compared with
/// only the key order changed: a server that reads its own SDK's layout faster than
/// others shows it as the gap between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The system's own client (for the baseline: its serde structs, the params' keys
    /// sorted by `serde_json::Value`).
    Sdk,
    /// As mcpflow's client writes a request: `{"jsonrpc":"2.0","id":N,"method":M,
    /// "params":{"_meta":{"progressToken":N},"name":..,"arguments":..}}`.
    Mcpflow,
    /// As the TypeScript SDK writes a request (`{...request, jsonrpc, id}`, the token
    /// added as `{...params, _meta}`): `{"method":M,"params":{"name":..,"arguments":..,
    /// "_meta":{"progressToken":N}},"jsonrpc":"2.0","id":N}`.
    Ts,
}

impl Layout {
    /// Every layout, in table order.
    pub const ALL: [Layout; 3] = [Layout::Sdk, Layout::Mcpflow, Layout::Ts];

    /// The name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Sdk => "sdk",
            Layout::Mcpflow => "mcpflow",
            Layout::Ts => "ts",
        }
    }

    /// The layout called `name`.
    pub fn parse(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// A request as the TypeScript SDK writes it: `{...request, jsonrpc, id}`.
#[derive(Serialize)]
struct MethodFirst<'a, P: Serialize> {
    method: &'a str,
    params: P,
    jsonrpc: &'static str,
    id: u64,
}

/// A notification without params as the TypeScript SDK writes it.
#[derive(Serialize)]
struct MethodFirstNotification<'a> {
    method: &'a str,
    jsonrpc: &'static str,
}

/// `_meta` asking for progress.
#[derive(Serialize)]
struct TokenMeta {
    #[serde(rename = "progressToken")]
    progress_token: u64,
}

/// `tools/call` params with the token first, as mcpflow's client writes them.
#[derive(Serialize)]
struct MetaFirst<'a> {
    #[serde(rename = "_meta")]
    meta: TokenMeta,
    name: &'a str,
    arguments: &'a serde_json::Value,
}

/// `tools/call` params with the token last, as the TypeScript SDK writes them
/// (`{...params, _meta}`).
#[derive(Serialize)]
struct MetaLast<'a> {
    name: &'a str,
    arguments: &'a serde_json::Value,
    #[serde(rename = "_meta")]
    meta: TokenMeta,
}

/// `tools/call` parameters with an optional progress token.
fn call_params(
    name: &str,
    arguments: serde_json::Value,
    progress_token: Option<u64>,
) -> serde_json::Value {
    match progress_token {
        Some(token) => serde_json::json!({
            "name": name, "arguments": arguments, "_meta": {"progressToken": token}
        }),
        None => serde_json::json!({"name": name, "arguments": arguments}),
    }
}

/// A request laid out as `layout` writes it.
pub(crate) fn request_frame<P: Serialize>(
    layout: Layout,
    id: u64,
    method: &str,
    params: P,
) -> Vec<u8> {
    match layout {
        Layout::Ts => encode(&MethodFirst {
            method,
            params,
            jsonrpc: "2.0",
            id,
        }),
        Layout::Sdk | Layout::Mcpflow => encode(&Outbound {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params,
        }),
    }
}

/// A notification without params laid out as `layout` writes it.
pub(crate) fn notification_frame(layout: Layout, method: &str) -> Vec<u8> {
    match layout {
        Layout::Ts => encode(&MethodFirstNotification {
            method,
            jsonrpc: "2.0",
        }),
        Layout::Sdk | Layout::Mcpflow => encode(&Outbound {
            jsonrpc: "2.0",
            id: None,
            method,
            params: serde_json::json!({}),
        }),
    }
}

/// A `tools/call` request laid out as `layout` writes it. `Mcpflow` and `Ts` always ask
/// for progress with the request's id as the token, as mcpflow's `call_tool` does on
/// every call and the TypeScript SDK does when given `onprogress`; `Sdk` (the baseline's
/// own) asks only when given `progress_token`.
pub(crate) fn tool_call_frame(
    layout: Layout,
    id: u64,
    name: &str,
    arguments: serde_json::Value,
    progress_token: Option<u64>,
) -> Vec<u8> {
    let meta = TokenMeta { progress_token: id };
    match layout {
        Layout::Sdk => request_frame(
            layout,
            id,
            "tools/call",
            call_params(name, arguments, progress_token),
        ),
        Layout::Mcpflow => request_frame(
            layout,
            id,
            "tools/call",
            MetaFirst {
                meta,
                name,
                arguments: &arguments,
            },
        ),
        Layout::Ts => request_frame(
            layout,
            id,
            "tools/call",
            MetaLast {
                name,
                arguments: &arguments,
                meta,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcpflow::client::Client as McpflowClient;
    use mcpflow::transport::StreamTransport;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;
    use crate::baseline::{CallParams, Inbound, empty_reply, initialize_reply};
    use crate::common::DUPLEX_BYTES;

    fn call(layout: Layout, token: Option<u64>) -> String {
        let frame = tool_call_frame(layout, 7, "echo", json!({"text": "hi"}), token);
        String::from_utf8(frame).unwrap()
    }

    #[test]
    fn ts_layout_puts_the_method_first_and_the_token_last() {
        assert_eq!(
            call(Layout::Ts, None),
            r#"{"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7}},"jsonrpc":"2.0","id":7}"#
        );
        let note = notification_frame(Layout::Ts, "notifications/initialized");
        assert_eq!(
            note,
            br#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#
        );
    }

    #[test]
    fn mcpflow_layout_puts_the_envelope_and_the_token_first() {
        assert_eq!(
            call(Layout::Mcpflow, None),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"echo","arguments":{"text":"hi"}}}"#
        );
    }

    #[test]
    fn sdk_layout_asks_for_progress_only_when_told() {
        assert_eq!(
            call(Layout::Sdk, None),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"hi"},"name":"echo"}}"#
        );
        assert!(call(Layout::Sdk, Some(1)).contains(r#""_meta":{"progressToken":1}"#));
    }

    #[test]
    fn every_layout_reads_as_the_same_call() {
        for layout in [Layout::Mcpflow, Layout::Ts] {
            let frame = call(layout, None);
            let msg: Inbound<'_> = serde_json::from_str(&frame).unwrap();
            assert_eq!((msg.id, msg.method), (Some(7), Some("tools/call")));
            let params: CallParams<'_> = serde_json::from_str(msg.params.unwrap().get()).unwrap();
            assert_eq!(
                (params.name, params.arguments.text.as_str()),
                ("echo", "hi")
            );
            assert_eq!(params.meta.unwrap().progress_token, json!(7), "{layout:?}");
        }
    }

    /// The `mcpflow` layout stands for what mcpflow's client writes; if that changes,
    /// so must the layout.
    #[tokio::test]
    async fn mcpflow_layout_is_what_mcpflows_client_writes() {
        let (client_end, server_end) = tokio::io::duplex(DUPLEX_BYTES);
        let (sr, mut sw) = tokio::io::split(server_end);
        let server = tokio::spawn(async move {
            let mut lines = BufReader::new(sr).lines();
            while let Some(line) = lines.next_line().await.unwrap() {
                let msg: Inbound<'_> = serde_json::from_str(&line).unwrap();
                let (Some(id), Some(method)) = (msg.id, msg.method) else {
                    continue;
                };
                let mut reply = match method {
                    "tools/call" => return Some(line),
                    "initialize" => initialize_reply(id),
                    _ => empty_reply(id),
                };
                reply.push(b'\n');
                sw.write_all(&reply).await.unwrap();
            }
            None
        });
        let (cr, cw) = tokio::io::split(client_end);
        let connect =
            McpflowClient::builder("layout-test", "1.0.0").connect(StreamTransport::new(cr, cw));
        let client = tokio::time::timeout(Duration::from_secs(10), connect)
            .await
            .expect("mcpflow's client did not connect within 10 s")
            .unwrap();
        let caller =
            tokio::spawn(async move { client.call_tool("echo", json!({"text": "hi"})).await });
        let line = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("mcpflow's client sent no tools/call within 10 s")
            .unwrap()
            .expect("mcpflow's client closed without a tools/call");
        caller.abort();
        let id = serde_json::from_str::<Inbound<'_>>(&line)
            .unwrap()
            .id
            .unwrap();
        let expected = tool_call_frame(Layout::Mcpflow, id, "echo", json!({"text": "hi"}), None);
        assert_eq!(line, String::from_utf8(expected).unwrap());
    }
}
