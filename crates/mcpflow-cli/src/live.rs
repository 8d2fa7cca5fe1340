//! What a call shows while it runs: the server's progress (a bar on a terminal, plain
//! lines otherwise) and its log messages with their level, on stderr. Under `--json`
//! nothing is shown; the payloads are kept for the JSON output.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use mcpflow::ProgressUpdate;
use mcpflow::protocol::LoggingMessageNotificationParams;
use serde_json::{Value, json};

use crate::terminal::shown;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Json,
    Bar,
    Lines,
}

/// The live display of one call.
#[derive(Debug)]
pub struct Live {
    mode: Mode,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    bar: Option<ProgressBar>,
    progress: Vec<Value>,
    logs: Vec<Value>,
    counts: BTreeMap<String, u64>,
}

impl Live {
    /// A display for `--json` or for stderr as it is (terminal or not).
    pub fn new(json_out: bool) -> Live {
        let mode = if json_out {
            Mode::Json
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        };
        Live {
            mode,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count a notification by method.
    pub fn count(&self, method: &str) {
        *self.state().counts.entry(method.to_owned()).or_default() += 1;
    }

    /// Show one progress report.
    pub fn progress(&self, update: &ProgressUpdate) {
        let mut state = self.state();
        *state
            .counts
            .entry("notifications/progress".to_owned())
            .or_default() += 1;
        let mut payload = json!({ "progress": update.progress });
        if let Some(total) = update.total {
            payload["total"] = json!(total);
        }
        if let Some(message) = &update.message {
            payload["message"] = json!(message);
        }
        state.progress.push(payload);
        match self.mode {
            Mode::Json => {}
            Mode::Lines => errln!("progress {}", describe(update)),
            Mode::Bar => {
                let bar = state.bar.get_or_insert_with(|| {
                    let bar = ProgressBar::new(0);
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bar
                });
                // Positions are whole numbers; fractional reports are shown rounded.
                let position = update.progress.max(0.0).round() as u64;
                match update.total {
                    Some(total) => {
                        bar.set_style(
                            ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
                                .unwrap_or_else(|_| ProgressStyle::default_bar())
                                .progress_chars("=> "),
                        );
                        bar.set_length(total.max(0.0).round() as u64);
                    }
                    None => bar.set_style(
                        ProgressStyle::with_template("{spinner} {pos} {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    ),
                }
                bar.set_position(position);
                bar.set_message(shown(update.message.as_deref().unwrap_or_default()).into_owned());
            }
        }
    }

    /// Show one log message.
    pub fn log(&self, log: &LoggingMessageNotificationParams) {
        let mut state = self.state();
        let payload = serde_json::to_value(log).unwrap_or(Value::Null);
        state.logs.push(payload);
        if self.mode == Mode::Json {
            return;
        }
        let data = log_text(&log.data);
        let level = serde_json::to_value(log.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let line = match &log.logger {
            Some(logger) => format!("[{level}] {logger}: {data}"),
            None => format!("[{level}] {data}"),
        };
        match &state.bar {
            Some(bar) => bar.println(shown(&line)),
            None => errln!("{line}"),
        }
    }

    /// Leave the bar where the last report put it (a call that ended early, or was
    /// interrupted, is not shown as complete).
    pub fn finish(&self) {
        if let Some(bar) = self.state().bar.take() {
            bar.abandon();
        }
    }

    /// Counts by method, progress payloads and log payloads, for `--json`.
    pub fn to_json(&self) -> (Value, Value, Value) {
        let state = self.state();
        (
            json!(state.counts),
            Value::Array(state.progress.clone()),
            Value::Array(state.logs.clone()),
        )
    }

    /// Counts by method, for the text summary.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.state().counts.clone()
    }
}

fn describe(update: &ProgressUpdate) -> String {
    let mut line = match update.total {
        Some(total) => format!("{}/{}", update.progress, total),
        None => format!("{}", update.progress),
    };
    if let Some(message) = &update.message {
        line.push_str(": ");
        line.push_str(message);
    }
    line
}

/// A log message's data as a line: a string as it is; an object with a `msg` or
/// `message` string (Python's logging as FastMCP sends it) as that text, followed by
/// its other members that are not null; anything else as JSON.
fn log_text(data: &Value) -> String {
    let Value::Object(fields) = data else {
        return match data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
    };
    let Some((key, text)) = ["msg", "message"]
        .iter()
        .find_map(|k| Some((*k, fields.get(*k)?.as_str()?)))
    else {
        return data.to_string();
    };
    let rest: Vec<String> = fields
        .iter()
        .filter(|(k, v)| k.as_str() != key && !v.is_null())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if rest.is_empty() {
        text.to_owned()
    } else {
        format!("{text} ({})", rest.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::log_text;
    use serde_json::json;

    #[test]
    fn log_data_reads_as_a_line() {
        assert_eq!(log_text(&json!("plain")), "plain");
        assert_eq!(log_text(&json!({"msg": "hi", "extra": null})), "hi");
        assert_eq!(
            log_text(&json!({"message": "hi", "extra": {"a": 1}})),
            "hi (extra={\"a\":1})"
        );
        assert_eq!(log_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(log_text(&json!([1, 2])), "[1,2]");
    }
}
