//! Frames a peer might send, in every layout and damaged at random: the decoder never
//! panics, a frame means the same whatever its layout, and what the decoder accepts is
//! written back and decoded to the same message.
//!
//! Deterministic: a seeded generator lays each frame of a corpus out as some peer would
//! (member order, whitespace, escapes: `layout`), then damages it (byte flips,
//! truncation, insertion of JSON punctuation, splices of two frames), so a failure names
//! the seed and the frame and reproduces exactly.

// The generator and the layouts of mcpflow's integration tests, so both crates' tests
// write the same layouts.
#[path = "../../../mcpflow/tests/common/layout.rs"]
mod layout;
#[path = "../../../mcpflow/tests/common/rng.rs"]
mod rng;

use layout::{Layout, whole_numbers};
use mcpflow_protocol::CallToolResult;
use mcpflow_protocol::jsonrpc::{Decoded, Message, MessageRef, decode};
use rng::Rng;
use serde_json::{Value, json};

const CORPUS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"echo","arguments":{"text":"hi"}}}"#,
    r#"{"jsonrpc":"2.0","id":"a\"b","method":"ping"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"total":2,"message":"half"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\nb\u00e9\ud83d\ude00"}],"isError":false}}"#,
    r#"{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"x","annotations":{"priority":0.5}}],"structuredContent":{"n":1},"_meta":{"k":[1,2]}}}"#,
    r#"{"result":{"tools":[]},"id":-3,"jsonrpc":"2.0"}"#,
    r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"no","data":{"m":"x"}}}"#,
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
    r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b","params":[1,2]}]"#,
    r#"  {"jsonrpc" : "2.0" , "id" : 12 , "result" : { } }  "#,
    r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":null}"#,
];

/// Bytes a mutation may insert: JSON's structure and the escapes that trip parsers.
const PUNCTUATION: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"-",
    b"1e999",
    b"\"result\"",
    b"\"method\"",
    b"\"id\"",
    b"\xff",
    b"\xc3",
    b"\n",
    b" ",
];

fn mutate(rng: &mut Rng, frame: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.index(out.len() + 1);
        match rng.below(5) {
            0 if !out.is_empty() => {
                let i = rng.index(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 => out.truncate(at),
            2 => {
                let piece = *rng.pick(PUNCTUATION);
                out.splice(at..at, piece.iter().copied());
            }
            3 if !out.is_empty() => {
                let end = (at + rng.index(8)).min(out.len());
                out.drain(at.min(end)..end);
            }
            _ => {
                let from = rng.index(other.len() + 1);
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
        }
    }
    out
}

/// A message as comparable text: what it is, its id and method, and its raw members.
fn describe(message: &Message) -> String {
    match message {
        Message::Request(r) => format!(
            "request {} {:?} {:?}",
            r.id,
            r.method,
            r.params.as_ref().map(|p| p.get())
        ),
        Message::Notification(n) => format!(
            "notification {:?} {:?}",
            n.method,
            n.params.as_ref().map(|p| p.get())
        ),
        Message::Response(r) => format!("response {} {}", r.id, r.result.get()),
        Message::Error(e) => format!(
            "error {:?} {} {:?} {:?}",
            e.id.as_ref().map(ToString::to_string),
            e.error.code.0,
            e.error.message,
            e.error.data
        ),
    }
}

/// The messages a frame decodes to, as values of their own.
fn decoded(frame: &[u8]) -> Vec<Option<Message>> {
    match decode(frame) {
        Decoded::Single(one) => vec![one.ok().map(MessageRef::into_owned)],
        Decoded::Batch(items) => items
            .into_iter()
            .map(|m| m.ok().map(MessageRef::into_owned))
            .collect(),
    }
}

/// Everything one frame must satisfy.
fn check(frame: &[u8], seed: u64) {
    let shown = String::from_utf8_lossy(frame);
    // Written back out, a decoded message decodes to itself.
    for message in decoded(frame).into_iter().flatten() {
        let mut out = Vec::new();
        message.write_json(&mut out);
        match decoded(&out).as_slice() {
            [Some(again)] => assert_eq!(
                describe(again),
                describe(&message),
                "seed {seed}: rewritten differently: {shown}"
            ),
            _ => panic!(
                "seed {seed}: {} does not decode again (from {shown})",
                String::from_utf8_lossy(&out)
            ),
        }
        // A tool result that decodes is written back exactly as serde_json writes it.
        if let Message::Response(r) = &message
            && let Ok(call) = serde_json::from_str::<CallToolResult>(r.result.get())
        {
            let mut ours = Vec::new();
            if call.write_json(&mut ours).is_ok() {
                let theirs = serde_json::to_vec(&call).expect("serde_json writes it");
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&theirs),
                    "seed {seed}: {shown}"
                );
            }
        }
    }
}

/// What a message means, whatever its layout: its kind, id, method and members as values
/// (a whole number the same whether written `1` or `1.0`, as Python writes progress).
fn meaning(message: &Message) -> Value {
    let parsed = |raw: Option<&str>| {
        raw.map(|raw| whole_numbers(serde_json::from_str(raw).expect("a decoded member is JSON")))
    };
    match message {
        Message::Request(r) => json!({"request": r.id.to_string(), "method": r.method,
            "params": parsed(r.params.as_ref().map(|p| p.get()))}),
        Message::Notification(n) => json!({"notification": n.method,
            "params": parsed(n.params.as_ref().map(|p| p.get()))}),
        Message::Response(r) => json!({"response": r.id.to_string(),
            "result": parsed(Some(r.result.get()))}),
        Message::Error(e) => json!({"error": e.id.as_ref().map(ToString::to_string),
            "code": e.error.code.0, "message": e.error.message, "data": e.error.data}),
    }
}

/// The meaning of each message a frame decodes to (`None` for one that does not).
fn meanings(frame: &[u8]) -> Vec<Option<Value>> {
    decoded(frame)
        .iter()
        .map(|m| m.as_ref().map(meaning))
        .collect()
}

fn corpus() -> Vec<Value> {
    CORPUS
        .iter()
        .map(|frame| serde_json::from_str(frame).expect("the corpus is JSON"))
        .collect()
}

#[test]
fn the_corpus_itself_decodes() {
    for frame in CORPUS {
        assert!(
            !matches!(decode(frame.as_bytes()), Decoded::Single(Err(_))),
            "{frame}"
        );
        check(frame.as_bytes(), 0);
    }
}

#[test]
fn every_layout_of_a_frame_decodes_to_the_same_messages() {
    for message in corpus() {
        let plain = serde_json::to_string(&message).expect("a value writes");
        let expected = meanings(plain.as_bytes());
        assert!(expected.iter().all(Option::is_some), "{plain}");
        for layout in Layout::covering(true) {
            let frame = layout.write(&message);
            assert_eq!(meanings(frame.as_bytes()), expected, "{layout}: {frame}");
            check(frame.as_bytes(), 0);
        }
    }
}

/// The layouts are what they claim: sorted and compact is serde_json's own writing, and
/// this SDK's order is what its writer writes.
#[test]
fn the_sorted_layout_is_serde_json_and_the_sdk_layout_is_the_sdk_writer() {
    for message in corpus() {
        let sorted = Layout::compact(layout::Order::Sorted).write(&message);
        assert_eq!(sorted, serde_json::to_string(&message).expect("writes"));
        let ours = Layout::MCPFLOW.write(&message);
        if let [Some(decoded)] = decoded(ours.as_bytes()).as_slice() {
            let mut written = Vec::new();
            decoded.write_json(&mut written);
            assert_eq!(String::from_utf8_lossy(&written), ours);
        }
    }
}

#[test]
fn damaged_frames_never_panic_and_decode_to_what_they_write() {
    const ROUNDS: u64 = 30_000;
    let corpus = corpus();
    let decodes =
        |frame: &[u8]| matches!(decode(frame), Decoded::Single(Ok(_)) | Decoded::Batch(_));
    // Frames that decode before their damage, and after it.
    let (mut intact, mut accepted) = (0, 0);
    for seed in 1..=ROUNDS {
        let mut rng = Rng::new(seed);
        let frame = Layout::random(&mut rng, true).write(rng.pick(&corpus));
        let other = Layout::random(&mut rng, true).write(rng.pick(&corpus));
        let damaged = mutate(&mut rng, frame.as_bytes(), other.as_bytes());
        intact += u64::from(decodes(frame.as_bytes()));
        accepted += u64::from(decodes(&damaged));
        check(&damaged, seed);
    }
    // The mutations must not all be fatal, or the round-trip checks prove nothing.
    assert!(
        accepted > intact / 20,
        "only {accepted} of {intact} damaged frames decoded"
    );
}
