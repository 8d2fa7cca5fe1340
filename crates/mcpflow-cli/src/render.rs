//! Content as text on a terminal: text blocks as they are, binary content (image,
//! audio, blob) described, or decoded into files under `--out`.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

use crate::failure::Failure;

/// `value[key]` as text, or "".
pub fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Where binary content goes: a directory (`call --out DIR`), or nowhere.
#[derive(Debug, Default)]
pub struct Saver {
    dir: Option<PathBuf>,
    saved: usize,
    /// How to save what is only described, for the description.
    hint: Option<&'static str>,
}

impl Saver {
    /// Save into `dir` (created if missing); without it, describe binary content and
    /// name `--out DIR`.
    pub fn new(dir: Option<PathBuf>) -> Result<Saver, Failure> {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::usage(format!("--out {}: {e}", dir.display())))?;
        }
        Ok(Saver {
            dir,
            saved: 0,
            hint: Some("save it with --out DIR"),
        })
    }

    /// Describe binary content only, with `hint` saying how the verb saves it.
    pub fn describing(hint: Option<&'static str>) -> Saver {
        Saver {
            hint,
            ..Saver::default()
        }
    }

    /// Decode `base64` into the next file of the directory; the description to print.
    fn save(&mut self, kind: &str, mime: &str, base64: &str, uri: Option<&str>) -> String {
        let Some(dir) = &self.dir else {
            let hint = self.hint.map_or(String::new(), |h| format!("; {h}"));
            return format!("[{kind} {mime}, {} base64 bytes{hint}]", base64.len());
        };
        self.saved += 1;
        let name = uri
            .and_then(|u| u.rsplit('/').next())
            .filter(|n| !n.is_empty() && n.len() < 100 && !n.contains(['\\', ':']))
            .map(|n| format!("{}-{n}", self.saved))
            .unwrap_or_else(|| format!("{kind}-{}.{}", self.saved, extension(mime)));
        let path = dir.join(name);
        match write_base64(&path, base64) {
            Ok(n) => format!("[{kind} {mime}, {n} bytes saved to {}]", path.display()),
            Err(e) => format!("[{kind} {mime}: not saved: {e}]"),
        }
    }
}

/// Decode `base64` into `path`; the number of bytes written.
pub fn write_base64(path: &Path, base64: &str) -> Result<usize, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64.trim())
        .map_err(|e| format!("the content is not valid base64: {e}"))?;
    std::fs::write(path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes.len())
}

fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/json" => "json",
        m if m.starts_with("text/") => "txt",
        _ => "bin",
    }
}

/// Print content blocks (a tool result's or a prompt message's) to stdout.
pub fn print_blocks(blocks: &[Value], saver: &mut Saver) {
    for block in blocks {
        match text(block, "type") {
            "text" => outln!("{}", text(block, "text")),
            kind @ ("image" | "audio") => {
                let line = saver.save(kind, text(block, "mimeType"), text(block, "data"), None);
                outln!("{line}");
            }
            "resource_link" => outln!("[link {} ({})]", text(block, "uri"), text(block, "name")),
            "resource" => print_contents(std::slice::from_ref(&block["resource"]), saver),
            _ => outln!("{block}"),
        }
    }
}

/// Print resource contents (`resources/read`, an embedded resource).
pub fn print_contents(contents: &[Value], saver: &mut Saver) {
    for content in contents {
        let uri = text(content, "uri");
        let mime = text(content, "mimeType");
        if let Some(body) = content.get("text").and_then(Value::as_str) {
            outln!("[resource {uri} {mime}]");
            outln!("{body}");
        } else if let Some(blob) = content.get("blob").and_then(Value::as_str) {
            outln!("{}", saver.save("blob", mime, blob, Some(uri)));
        } else {
            outln!("{content}");
        }
    }
}

/// Write the contents of `resources/read` to `path`: the text, or the decoded blob.
/// Several contents are written one after the other.
pub fn write_contents(contents: &[Value], path: &Path) -> Result<usize, Failure> {
    let mut bytes = Vec::new();
    for content in contents {
        if let Some(body) = content.get("text").and_then(Value::as_str) {
            bytes.extend_from_slice(body.as_bytes());
        } else if let Some(blob) = content.get("blob").and_then(Value::as_str) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .map_err(|e| {
                    Failure::connection(format!(
                        "the blob of `{}` is not valid base64: {e}",
                        text(content, "uri")
                    ))
                })?;
            bytes.extend_from_slice(&decoded);
        }
    }
    std::fs::write(path, &bytes)
        .map_err(|e| Failure::usage(format!("--out {}: {e}", path.display())))?;
    Ok(bytes.len())
}
