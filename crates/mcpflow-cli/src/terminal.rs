//! Text from a server made safe to show on a terminal.
//!
//! Tool results, names, descriptions, log lines and error messages come from the
//! server. Printed as they are, their control characters are the terminal's commands:
//! an escape sequence can clear the screen, retitle the window, hide the text before it
//! or (on some terminals) answer back as typed input. Human output therefore shows
//! every control character but newline and tab as an escape (`\u{1b}`). JSON output
//! (`--json`) is left to serde, which escapes control characters itself.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with each control character other than `\n` and `\t` written as `\u{..}`.
///
/// ```text
/// shown("ok\x1b[2J") == "ok\\u{1b}[2J"
/// ```
pub fn shown(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `println!` of a line shown with [`shown`].
macro_rules! outln {
    ($($arg:tt)*) => {
        println!("{}", $crate::terminal::shown(&format!($($arg)*)))
    };
}

/// `eprintln!` of a line shown with [`shown`].
macro_rules! errln {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::terminal::shown(&format!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn controls_but_newline_and_tab_are_escaped() {
        assert_eq!(shown("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(shown("ok\x1b[2J\r\x07"), "ok\\u{1b}[2J\\u{d}\\u{7}");
        // C1 controls (CSI as one character) and DEL too.
        assert_eq!(shown("a\u{9b}31mb\u{7f}"), "a\\u{9b}31mb\\u{7f}");
        assert!(matches!(shown("né ✓"), std::borrow::Cow::Borrowed(_)));
    }
}
