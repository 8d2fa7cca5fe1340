//! `CallToolResult::from_json_in` decodes every result to what `serde_json::from_str`
//! does, whether it takes the frame's buffer (one large plain text block), reads a small
//! plain text block from its head and tail, or takes the general decoder.

use mcpflow_protocol::CallToolResult;

/// A text large enough to be decoded in place.
fn large(unit: &str) -> String {
    unit.repeat(200 * 1024 / unit.len())
}

/// `result` inside a JSON-RPC response, and the range it lies at.
fn framed(result: &str) -> (String, std::ops::Range<usize>) {
    let head = r#"{"jsonrpc":"2.0","id":7,"result":"#;
    (
        format!("{head}{result}}}"),
        head.len()..head.len() + result.len(),
    )
}

/// Decode `result` both ways and check they agree; the result decoded in place.
fn agrees(result: &str) -> Option<CallToolResult> {
    let expected = serde_json::from_str::<CallToolResult>(result);
    let (frame, range) = framed(result);
    let decoded = CallToolResult::from_json_in(frame, range);
    let shown: String = result.chars().take(120).collect();
    match (expected, decoded) {
        (Ok(expected), Ok(decoded)) => {
            assert!(expected == decoded, "differs for {shown}");
            Some(decoded)
        }
        (Err(_), Err(_)) => None,
        (expected, decoded) => panic!(
            "for {shown}: serde_json {:?}, in place {:?}",
            expected.map(|_| "a result"),
            decoded.map(|_| "a result")
        ),
    }
}

fn literal(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// A result of one plain text block with the string literal `lit`, in every layout
/// the tests read: the ones `write_json` writes, other orders, `null`, whitespace.
fn plain_forms(lit: &str) -> [String; 7] {
    [
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"isError":false}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"isError":true}}"#),
        format!(r#"{{"content":[{{"text":{lit},"type":"text"}}],"isError":true}}"#),
        format!(r#"{{"isError":false,"content":[{{"type":"text","text":{lit}}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"isError":null}}"#),
        format!(" {{ \"content\" : [ {{ \"type\" : \"text\" , \"text\" : {lit} }} ] }} "),
    ]
}

#[test]
fn large_plain_text_in_every_form_decodes_as_serde_json_does() {
    let texts = [
        large("x"),
        large("line \"one\"\\\n€ tab\t日本🎉"),
        large("\u{1}\u{1f}\u{7f}\u{2028}"),
        format!("{}\n", large("a")),
        format!("\n{}", large("a")),
    ];
    for text in &texts {
        let lit = literal(text);
        for result in plain_forms(&lit) {
            let decoded = agrees(&result).expect("a valid result");
            // The text kept the frame's buffer (a copy would be exactly its size).
            let Some(mcpflow_protocol::ContentBlock::Text(block)) = decoded.content.first() else {
                panic!("no text block");
            };
            assert!(
                block.text.capacity() > block.text.len(),
                "copied, not decoded in place"
            );
        }
    }
    // Escapes serde_json never writes but reads.
    let escaped = format!(
        r#"{{"content":[{{"type":"text","text":"\/\u0041\ud83c\udf89{}"}}]}}"#,
        "y".repeat(100 * 1024)
    );
    let decoded = agrees(&escaped).expect("decodes");
    assert!(
        decoded.content[0]
            .as_text()
            .unwrap_or_default()
            .starts_with("/A🎉y")
    );
}

#[test]
fn small_plain_text_in_every_form_decodes_as_serde_json_does() {
    for text in [
        "",
        "x",
        "hello from the benchmark",
        "line \"one\"\\\n€ tab\t日本🎉",
        "\u{1}\u{7f}\u{2028}",
    ] {
        let lit = literal(text);
        for result in plain_forms(&lit) {
            let decoded = agrees(&result).expect("a valid result");
            assert_eq!(decoded.content[0].as_text(), Some(text), "{result}");
        }
    }
    let escaped = r#"{"content":[{"type":"text","text":"\/\u0041\ud83c\udf89"}]}"#;
    assert_eq!(
        agrees(escaped).expect("decodes").content[0].as_text(),
        Some("/A🎉")
    );
}

#[test]
fn other_shapes_decode_as_serde_json_does() {
    let lit = literal(&large("text \"with\" escapes\n"));
    for result in [
        format!(r#"{{"content":[{{"type":"text","text":{lit},"annotations":{{"priority":1}}}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit},"_meta":{{"k":1}}}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"_meta":{{"k":1}}}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"resultType":"complete"}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}},{{"type":"text","text":"b"}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"structuredContent":{{"a":1}}}}"#),
        format!(r#"{{"content":[{{"type":"t\u0065xt","text":{lit}}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit},"text":"again"}}]}}"#),
        format!(r#"{{"content":[],"content":[{{"type":"text","text":{lit}}}]}}"#),
        format!(r#"{{"content":[{{"type":"image","data":{lit},"mimeType":"image/png"}}]}}"#),
        format!(r#"{{"content":[{{"type":"text","text":{lit}}}],"isError":"yes"}}"#),
        format!(r#"{{"content":[{{"type":"text","text":12}}],"padding":{lit}}}"#),
        format!(r#"{{"contents":[{{"type":"text","text":{lit}}}]}}"#),
        format!("[{lit}]"),
        r#"{"content":[{"type":"text","text":"small"}]}"#.to_owned(),
        // Near misses of the layout a small result is read from its head and tail in.
        r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a"}],"isError":true}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a","annotations":{}}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a"}],"structuredContent":{"isError":true}}"#
            .to_owned(),
        r#"{"content":[{"type":"text","text":"a"}],"isError":false,"isError":true}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a"}],"isError":1}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a\"}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"a" "b"}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":12}]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":"small"}],"isError":true}"#.to_owned(),
    ] {
        let _ = agrees(&result);
    }
}

#[test]
fn bad_text_is_an_error_not_a_panic() {
    let pad = "z".repeat(100 * 1024);
    for text in [
        format!(r#""{pad}\uD800""#),
        format!(r#""{pad}\uDC00x""#),
        format!(r#""\uD83C\u0041{pad}""#),
        format!(r#""{pad}\x""#),
        format!(r#""{pad}\u12""#),
    ] {
        let result = format!(r#"{{"content":[{{"type":"text","text":{text}}}]}}"#);
        let (frame, range) = framed(&result);
        assert!(
            CallToolResult::from_json_in(frame, range).is_err(),
            "accepted {}",
            &text[text.len() - 12..]
        );
    }
    let (frame, _) = framed(r#"{"content":[]}"#);
    let len = frame.len();
    assert!(CallToolResult::from_json_in(frame.clone(), 0..len + 1).is_err());
    let (start, end) = (3, 1);
    assert!(CallToolResult::from_json_in(frame, start..end).is_err());
}
