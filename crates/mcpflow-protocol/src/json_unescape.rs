//! JSON string literals read in place: [`unwrap_in_place`] decodes a literal into the
//! front of the buffer that holds it, the reading side of
//! [`wrap_in_place`](crate::json_text::wrap_in_place).

use std::ops::Range;

/// One step of a literal's content: bytes that stand for themselves, or one escape.
enum Piece {
    /// `text[start..end]`, copied as it is.
    Run(usize, usize),
    /// An escape sequence and the character it stands for.
    Char(char),
}

/// Why a literal's content cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BadLiteral {
    /// Not enclosed in quotes, or outside the buffer.
    NotALiteral,
    /// An escape that JSON does not have, or one cut short.
    BadEscape,
    /// A `\u` escape of half a surrogate pair without its other half.
    LoneSurrogate,
}

impl std::fmt::Display for BadLiteral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadLiteral::NotALiteral => "not a JSON string literal",
            BadLiteral::BadEscape => "invalid escape in a JSON string",
            BadLiteral::LoneSurrogate => "lone surrogate in a JSON string's \\u escape",
        })
    }
}

/// The text of the JSON string literal `text[literal]` (its quotes included), decoded
/// into the front of `text`'s own buffer, which then holds only that: escapes only
/// shorten text, so each byte is written at or before where it is read, and no second
/// buffer the size of the text is ever made.
///
/// The literal must be one a JSON parser accepted (no raw control characters or quotes
/// inside); its escapes are checked here. On an error `text` is lost: what it held was
/// already partly overwritten.
pub(crate) fn unwrap_in_place(
    mut text: String,
    literal: Range<usize>,
) -> Result<String, BadLiteral> {
    let inner = match text.as_bytes().get(literal.clone()) {
        Some([b'"', .., b'"']) if literal.len() >= 2 => literal.start + 1..literal.end - 1,
        _ => return Err(BadLiteral::NotALiteral),
    };
    let Some(first_escape) = memchr::memchr(b'\\', &text.as_bytes()[inner.clone()]) else {
        // Nothing to decode: the text moves to the front, and stays a `String` (both
        // ends are next to a quote, so on character boundaries).
        text.truncate(inner.end);
        text.drain(..inner.start);
        return Ok(text);
    };
    let mut buf = text.into_bytes();
    let mut read = inner.start + first_escape;
    let mut write = 0;
    buf.copy_within(inner.start..read, write);
    write += first_escape;
    while read < inner.end {
        let (piece, next) = next_piece(&buf[..inner.end], read)?;
        match piece {
            Piece::Run(start, end) => {
                buf.copy_within(start..end, write);
                write += end - start;
            }
            Piece::Char(c) => {
                // An escape is at least as long as the UTF-8 it stands for.
                let mut utf8 = [0; 4];
                let bytes = c.encode_utf8(&mut utf8).as_bytes();
                buf[write..write + bytes.len()].copy_from_slice(bytes);
                write += bytes.len();
            }
        }
        read = next;
    }
    buf.truncate(write);
    // Runs start and end next to a backslash or a quote (ASCII), and escapes decode to
    // whole characters, so this always holds valid UTF-8.
    String::from_utf8(buf).map_err(|_| BadLiteral::NotALiteral)
}

/// The piece of `text` that starts at `at` (before `text.len()`), and where the next one
/// starts.
fn next_piece(text: &[u8], at: usize) -> Result<(Piece, usize), BadLiteral> {
    if text[at] != b'\\' {
        let end = memchr::memchr(b'\\', &text[at..]).map_or(text.len(), |i| at + i);
        return Ok((Piece::Run(at, end), end));
    }
    let short = |c: char| Ok((Piece::Char(c), at + 2));
    match text.get(at + 1) {
        Some(b'"') => short('"'),
        Some(b'\\') => short('\\'),
        Some(b'/') => short('/'),
        Some(b'b') => short('\u{8}'),
        Some(b'f') => short('\u{c}'),
        Some(b'n') => short('\n'),
        Some(b'r') => short('\r'),
        Some(b't') => short('\t'),
        Some(b'u') => {
            let first = hex4(text, at + 2)?;
            match first {
                0xD800..=0xDBFF => {
                    if text.get(at + 6..at + 8) != Some(b"\\u") {
                        return Err(BadLiteral::LoneSurrogate);
                    }
                    let second = hex4(text, at + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&second) {
                        return Err(BadLiteral::LoneSurrogate);
                    }
                    let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                    let c = char::from_u32(code).ok_or(BadLiteral::LoneSurrogate)?;
                    Ok((Piece::Char(c), at + 12))
                }
                _ => {
                    let c = char::from_u32(first).ok_or(BadLiteral::LoneSurrogate)?;
                    Ok((Piece::Char(c), at + 6))
                }
            }
        }
        _ => Err(BadLiteral::BadEscape),
    }
}

/// The four hex digits at `text[at..at + 4]` as a number.
fn hex4(text: &[u8], at: usize) -> Result<u32, BadLiteral> {
    let digits = text.get(at..at + 4).ok_or(BadLiteral::BadEscape)?;
    digits.iter().try_fold(0, |n, &d| {
        let v = char::from(d).to_digit(16).ok_or(BadLiteral::BadEscape)?;
        Ok(n << 4 | v)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;

    /// `literal` placed after `before` and before `after` in one buffer, unwrapped.
    fn unwrap(before: &str, literal: &str, after: &str) -> Result<String, BadLiteral> {
        let text = format!("{before}{literal}{after}");
        unwrap_in_place(text, before.len()..before.len() + literal.len())
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "\"quoted\" \\ back\\slash / \u{8}\u{c}\n\r\t".into(),
            "é ü 日本 🎉 \u{7f} \u{2028}".into(),
            (0u8..0x80).map(char::from).collect(),
            "\n".repeat(1000),
            format!("{}\u{1}{}", "x".repeat(5000), "y".repeat(5000)),
        ];
        // Every escape kind at every position, with multi-byte text between.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in [1, 2, 7, 100, 3000] {
            for _ in 0..20 {
                cases.push(crate::json_text::tests::scattered(len, 2, &mut seed));
            }
        }
        for case in &cases {
            let literal = serde_json::to_string(case).unwrap();
            for (before, after) in [("", ""), (r#"{"content":[{"text":"#, "}]}")] {
                assert_eq!(&unwrap(before, &literal, after).unwrap(), case, "{case:?}");
            }
        }
    }

    #[test]
    fn reads_the_escapes_serde_json_does_not_write() {
        for (literal, expected) in [
            (r#""\/""#, "/"),
            (r#""\u0041\u00e9\u65e5""#, "Aé日"),
            (r#""\uD83C\uDF89!""#, "🎉!"),
            (r#""\ud83c\udf89""#, "🎉"),
        ] {
            assert_eq!(unwrap("[", literal, "]").unwrap(), expected);
            assert_eq!(
                serde_json::from_str::<String>(literal).unwrap(),
                expected,
                "{literal}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_a_valid_literal() {
        for (literal, error) in [
            (r#""\x""#, BadLiteral::BadEscape),
            (r#""\u12""#, BadLiteral::BadEscape),
            (r#""\u12G4""#, BadLiteral::BadEscape),
            (r#""\""#, BadLiteral::BadEscape),
            (r#""\uD800""#, BadLiteral::LoneSurrogate),
            (r#""\uD800\n""#, BadLiteral::LoneSurrogate),
            (r#""\uD800\u0041""#, BadLiteral::LoneSurrogate),
            (r#""\uDC00""#, BadLiteral::LoneSurrogate),
            ("\"open", BadLiteral::NotALiteral),
            ("\"", BadLiteral::NotALiteral),
            ("plain", BadLiteral::NotALiteral),
        ] {
            assert_eq!(unwrap("", literal, "").unwrap_err(), error, "{literal}");
        }
        assert_eq!(
            unwrap_in_place("\"a\"".into(), 0..9).unwrap_err(),
            BadLiteral::NotALiteral
        );
    }
}
