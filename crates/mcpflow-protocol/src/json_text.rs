//! JSON string literals written a chunk at a time: the bytes `serde_json` writes, but
//! checked 32 bytes at once rather than one by one, as long texts without escapes are
//! what tool results mostly carry. [`wrap_in_place`] writes one inside the text's own
//! buffer.

/// Bytes checked at once for anything that needs an escape.
const CHUNK: usize = 32;
/// Bytes of text [`wrap_in_place`] moves at a time (their escapes are listed first).
const BLOCK: usize = 8 * 1024;

/// Append `s` as a JSON string literal, byte for byte what `serde_json` writes.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Start of the run that needs no escape and is not copied yet.
    let mut run = 0;
    while let Some(i) = next_escape(bytes, run) {
        out.extend_from_slice(&bytes[run..i]);
        write_escape(out, bytes[i]);
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// The first byte at or after `from` that needs an escape: chunks are checked whole
/// (no early exit, so the compiler uses vector compares), and only the chunk that has
/// one is searched byte by byte.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut chunks = rest.chunks_exact(CHUNK);
    let mut at = from;
    for chunk in &mut chunks {
        if chunk
            .iter()
            .fold(false, |dirty, &b| dirty | needs_escape(b))
        {
            return chunk.iter().position(|&b| needs_escape(b)).map(|p| at + p);
        }
        at += CHUNK;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| needs_escape(b))
        .map(|p| at + p)
}

/// `prefix`, `text` as a JSON string literal (what [`write_str`] writes), then `suffix`,
/// written in the text's own buffer. The buffer grows once, by the escapes and the two
/// ends, and the text moves right into place a block at a time from its end, so no
/// second buffer the size of the text is ever made.
pub(crate) fn wrap_in_place(text: String, prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    let mut buf = text.into_bytes();
    let len = buf.len();
    let mut escaped_len = len;
    let mut at = 0;
    while let Some(i) = next_escape(&buf, at) {
        escaped_len += escape(buf[i]).1 - 1;
        at = i + 1;
    }
    let total = prefix.len() + escaped_len + 2 + suffix.len();
    // Exactly: `resize` alone would double the capacity of a buffer that is full.
    buf.reserve_exact(total - len);
    buf.resize(total, 0);
    // Everything is written from the end. The text still to move is `buf[..end]`; its
    // place ends at `dst`, which stays past `end` (the opening quote comes first, and
    // escapes only lengthen), so nothing is overwritten before it is read.
    let mut dst = total - suffix.len();
    buf[dst..].copy_from_slice(suffix);
    dst -= 1;
    buf[dst] = b'"';
    let mut escapes = Vec::new();
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        escapes.clear();
        let mut at = start;
        while let Some(i) = next_escape(&buf[..end], at) {
            escapes.push(i);
            at = i + 1;
        }
        for &i in escapes.iter().rev() {
            dst -= end - (i + 1);
            buf.copy_within(i + 1..end, dst);
            let (seq, n) = escape(buf[i]);
            dst -= n;
            buf[dst..dst + n].copy_from_slice(&seq[..n]);
            end = i;
        }
        dst -= end - start;
        buf.copy_within(start..end, dst);
        end = start;
    }
    dst -= 1;
    buf[dst] = b'"';
    buf[..prefix.len()].copy_from_slice(prefix);
    buf
}

const fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

fn write_escape(out: &mut Vec<u8>, b: u8) {
    let (seq, n) = escape(b);
    out.extend_from_slice(&seq[..n]);
}

/// The escape sequence for `b` (one [`needs_escape`] picks) and its length.
fn escape(b: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match ESCAPE[usize::from(b)] {
        b'u' => (
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            6,
        ),
        short => ([b'\\', short, 0, 0, 0, 0], 2),
    }
}

/// For each byte, the character after the backslash that escapes it (`u` for
/// `\u00XX`), or 0 when it needs none: serde_json's choices, for the bytes
/// [`needs_escape`] picks.
static ESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            byte if needs_escape(byte) && byte < 0x20 => b'u',
            byte if needs_escape(byte) => byte,
            _ => 0,
        };
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;

    /// `len` characters, mostly `x` (so runs and chunks of both kinds occur), about one
    /// in `one_in` an escape of some kind or a multi-byte character; `seed` advances.
    fn scattered(len: usize, one_in: u64, seed: &mut u64) -> String {
        let alphabet: Vec<char> = "ab \"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é日🎉".chars().collect();
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                if seed.is_multiple_of(one_in) {
                    alphabet[(*seed >> 8) as usize % alphabet.len()]
                } else {
                    'x'
                }
            })
            .collect()
    }

    fn written(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "\"quoted\" \\ back\\slash".into(),
            "é ü 日本 🎉 \u{7f} \u{2028}".into(),
            (0u8..0x80).map(char::from).collect(),
            "x".repeat(CHUNK - 1),
            "x".repeat(CHUNK),
            "x".repeat(CHUNK + 1),
            format!("{}\"{}", "a".repeat(CHUNK - 1), "b".repeat(CHUNK)),
            format!("{}\n", "a".repeat(3 * CHUNK)),
            "\n".repeat(3 * CHUNK + 5),
        ];
        // Pseudo-random mixes of clean text and every kind of escape, across chunk edges.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in [5, 31, 32, 33, 64, 100, 1000] {
            for _ in 0..20 {
                cases.push(scattered(len, 4, &mut seed));
            }
        }
        for case in &cases {
            assert_eq!(
                written(case),
                serde_json::to_string(case).unwrap(),
                "{case:?}"
            );
        }
    }

    #[test]
    fn wraps_in_place_what_serde_json_writes() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            (0u8..0x80).map(char::from).collect(),
            "x".repeat(BLOCK),
            "x".repeat(3 * BLOCK + 7),
            format!("{}\n{}", "a".repeat(BLOCK - 1), "b".repeat(BLOCK)),
            format!("\"{}\u{1}", "a".repeat(BLOCK)),
            "\n".repeat(2 * BLOCK + 3),
            "\u{1}".repeat(BLOCK + 1),
        ];
        // Escapes of every kind, scattered across block and chunk edges.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for len in [1, 100, BLOCK - 1, BLOCK + 1, 5 * BLOCK / 2] {
            for _ in 0..4 {
                cases.push(scattered(len, 8, &mut seed));
            }
        }
        for (prefix, suffix) in [
            (&b""[..], &b""[..]),
            (b"{\"text\":", b"}],\"isError\":false}"),
        ] {
            for case in &cases {
                let mut expected = prefix.to_vec();
                expected.extend_from_slice(serde_json::to_string(case).unwrap().as_bytes());
                expected.extend_from_slice(suffix);
                let wrapped = wrap_in_place(case.clone(), prefix, suffix);
                assert!(wrapped == expected, "{case:?}");
            }
        }
    }
}
