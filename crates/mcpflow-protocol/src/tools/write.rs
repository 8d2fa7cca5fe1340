//! Writing a [`CallToolResult`] as JSON by hand: the bytes `serde_json` writes, with
//! long texts escaped a chunk at a time and a lone text block wrapped in its own buffer.

use super::CallToolResult;
use crate::content::ContentBlock;
use crate::json_text;

/// What comes before the text's string literal in a result of one plain text block.
const PLAIN_TEXT_HEAD: &[u8] = br#"{"content":[{"type":"text","text":"#;

/// What comes after the text's string literal in a result of one plain text block with
/// this `isError`.
fn plain_text_tail(is_error: Option<bool>) -> &'static [u8] {
    match is_error {
        None => b"}]}",
        Some(false) => br#"}],"isError":false}"#,
        Some(true) => br#"}],"isError":true}"#,
    }
}

impl CallToolResult {
    /// This result as compact JSON, consuming it: the bytes [`write_json`](Self::write_json)
    /// writes. A result that is one plain text block (no annotations or metadata) with
    /// nothing else but `isError` is written inside the text's own buffer, so a large
    /// text costs no second buffer of its size; any other result is written into a
    /// buffer sized for its text and data.
    ///
    /// # Errors
    /// As [`write_json`](Self::write_json).
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// let result = CallToolResult::text("line one\nline \"two\"");
    /// let expected = serde_json::to_vec(&result)?;
    /// assert_eq!(result.into_json()?, expected);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn into_json(mut self) -> Result<Vec<u8>, serde_json::Error> {
        let plain = self.content.len() == 1
            && self.structured_content.is_none()
            && self.meta.is_none()
            && self.result_type.is_none()
            && self.extra.is_empty()
            && matches!(
                &self.content[0],
                ContentBlock::Text(t) if t.annotations.is_none() && t.meta.is_none() && t.extra.is_empty()
            );
        if plain && let Some(ContentBlock::Text(text)) = self.content.pop() {
            return Ok(json_text::wrap_in_place(
                text.text,
                PLAIN_TEXT_HEAD,
                plain_text_tail(self.is_error),
            ));
        }
        let payload = self.payload_len();
        // Room for the envelope and a few escapes; more escapes just grow the buffer.
        let mut out = Vec::with_capacity(payload + payload / 64 + 4096);
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// Append this result as compact JSON to `out`: the bytes `serde_json::to_writer`
    /// writes, with the text of plain text blocks escaped a chunk at a time rather than
    /// a byte at a time, as tool results are mostly long runs of text without escapes.
    ///
    /// # Errors
    /// When a member's `Serialize` implementation fails (it does not for values read
    /// from JSON).
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// let result = CallToolResult::text("line one\nline \"two\"");
    /// let mut out = Vec::new();
    /// result.write_json(&mut out)?;
    /// assert_eq!(out, serde_json::to_vec(&result)?);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(br#"{"content":["#);
        for (i, block) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                ContentBlock::Text(text)
                    if text.annotations.is_none()
                        && text.meta.is_none()
                        && text.extra.is_empty() =>
                {
                    out.extend_from_slice(br#"{"type":"text","text":"#);
                    json_text::write_str(out, &text.text);
                    out.push(b'}');
                }
                block => serde_json::to_writer(&mut *out, block)?,
            }
        }
        out.push(b']');
        if let Some(value) = &self.structured_content {
            out.extend_from_slice(br#","structuredContent":"#);
            serde_json::to_writer(&mut *out, value)?;
        }
        if let Some(is_error) = self.is_error {
            out.extend_from_slice(if is_error {
                br#","isError":true"#
            } else {
                br#","isError":false"#
            });
        }
        if let Some(meta) = &self.meta {
            out.extend_from_slice(br#","_meta":"#);
            serde_json::to_writer(&mut *out, meta)?;
        }
        if let Some(result_type) = &self.result_type {
            out.extend_from_slice(br#","resultType":"#);
            json_text::write_str(out, result_type.as_str());
        }
        for (key, value) in &self.extra {
            out.push(b',');
            json_text::write_str(out, key);
            out.push(b':');
            serde_json::to_writer(&mut *out, value)?;
        }
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn into_json_writes_what_serde_json_writes() {
        let mut annotated = crate::content::TextContent::new("annotated");
        annotated.meta = Some(json!({"k": 1}).as_object().cloned().unwrap());
        let mut flagged = CallToolResult::text("ok \"quoted\"\n");
        flagged.is_error = Some(false);
        let mut unflagged = CallToolResult::text("no flag");
        unflagged.is_error = None;
        let mut with_meta = CallToolResult::text("with meta");
        with_meta.meta = Some(json!({"m": true}).as_object().cloned().unwrap());
        let results = [
            CallToolResult::default(),
            CallToolResult::text(format!("{}\u{1}\n\"é🎉\\", "x".repeat(20_000))),
            CallToolResult::error("it failed"),
            flagged,
            unflagged,
            with_meta,
            CallToolResult::structured(json!({"a": 1})),
            CallToolResult {
                content: vec![ContentBlock::Text(annotated)],
                ..CallToolResult::default()
            },
            CallToolResult {
                content: vec![
                    ContentBlock::Text(crate::content::TextContent::new("one")),
                    ContentBlock::Text(crate::content::TextContent::new("two")),
                ],
                ..CallToolResult::default()
            },
        ];
        for result in results {
            let expected = serde_json::to_vec(&result).unwrap();
            let got = result.clone().into_json().unwrap();
            assert!(
                got == expected,
                "{result:?}: {}",
                String::from_utf8_lossy(&got)
            );
        }
    }

    #[test]
    fn write_json_writes_what_serde_json_writes() {
        let mut annotated = crate::content::TextContent::new("annotated \"text\"");
        annotated.meta = Some(json!({"k": 1}).as_object().cloned().unwrap());
        let results = [
            CallToolResult::default(),
            CallToolResult::text("plain"),
            CallToolResult::text(format!("{}\u{1}\n\"é🎉\\", "x".repeat(100))),
            CallToolResult::error("it failed"),
            CallToolResult::structured(json!({"a": [1, "two", null], "b": {"c": 1.5}})),
            CallToolResult {
                content: vec![
                    ContentBlock::text("one"),
                    ContentBlock::Text(annotated),
                    ContentBlock::image("aGk=", "image/png"),
                    ContentBlock::text("two"),
                ],
                structured_content: Some(json!("any json")),
                is_error: Some(false),
                meta: Some(json!({"trace": "t-1"}).as_object().cloned().unwrap()),
                result_type: Some(crate::ResultType::Complete),
                extra: json!({"we\"ird": [true]}).as_object().cloned().unwrap(),
            },
        ];
        for result in &results {
            let mut out = Vec::new();
            result.write_json(&mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(result).unwrap(),
                "{result:?}"
            );
        }
    }
}
