//! JSON string literals written a chunk at a time: the bytes `serde_json` writes, found
//! several times faster for long text, where serde_json looks up each byte in turn.

/// Bytes checked at once for anything that needs an escape; a clean chunk is copied
/// with the rest of its run.
const CHUNK: usize = 32;

/// Append `s` as a JSON string literal, byte for byte what `serde_json` writes.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Start of the run that needs no escape and is not copied yet.
    let mut run = 0;
    let mut chunks = bytes.chunks_exact(CHUNK);
    let mut at = 0;
    for chunk in &mut chunks {
        // No early exit, so the compiler checks the whole chunk with vector compares.
        if chunk
            .iter()
            .fold(false, |dirty, &b| dirty | needs_escape(b))
        {
            run = escape_each(out, bytes, run, at, at + CHUNK);
        }
        at += CHUNK;
    }
    run = escape_each(out, bytes, run, at, bytes.len());
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// Escape the bytes of `bytes[from..to]` that need it, copying the clean run before
/// each; returns where the run not yet copied starts.
fn escape_each(out: &mut Vec<u8>, bytes: &[u8], mut run: usize, from: usize, to: usize) -> usize {
    for (i, &b) in bytes.iter().enumerate().take(to).skip(from) {
        if needs_escape(b) {
            out.extend_from_slice(&bytes[run..i]);
            write_escape(out, b);
            run = i + 1;
        }
    }
    run
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

fn write_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
            return;
        }
    };
    out.push(b'\\');
    out.push(short);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;

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
        let alphabet: Vec<char> = "ab \"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é日🎉".chars().collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in [5, 31, 32, 33, 64, 100, 1000] {
            for _ in 0..20 {
                let text = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        // Mostly clean text, so runs and chunks of both kinds occur.
                        if seed.is_multiple_of(4) {
                            alphabet[(seed >> 8) as usize % alphabet.len()]
                        } else {
                            'x'
                        }
                    })
                    .collect();
                cases.push(text);
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
}
