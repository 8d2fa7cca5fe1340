//! Streamable HTTP at the wire: a server on a loopback port, and the events of an SSE
//! body as a raw client reads them.

use mcpflow::http::server::{HttpServer, RunningHttpServer};

use super::bounded;

/// `server` on a free loopback port.
pub async fn serve(server: HttpServer) -> RunningHttpServer {
    bounded("bind", server.bind("127.0.0.1:0"))
        .await
        .expect("bind a loopback port")
}

/// One server-sent event: its id and its data lines, joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

/// The events of an SSE body, by the rules of the `text/event-stream` format: an event
/// ends at a blank line; a line is `field: value` (one space after the colon is
/// dropped); a line opening with `:` is a comment. Blocks of comments alone (keep-alives)
/// are not events.
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut event = SseEvent {
            id: None,
            data: String::new(),
        };
        let mut fields = 0;
        let mut data = Vec::new();
        for line in block.lines() {
            if line.is_empty() || line.starts_with(':') {
                continue;
            }
            fields += 1;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_owned()),
                "data" => data.push(value),
                _ => {}
            }
        }
        if fields > 0 {
            event.data = data.join("\n");
            events.push(event);
        }
    }
    events
}
