//! `mcpflow inspect`: what a server offers. Every list the server declares is fetched;
//! a list that fails is reported and the rest is still shown.

use std::time::Duration;

use mcpflow::client::Client;
use serde_json::{Map, Value, json};

use crate::args::ServerArgs;
use crate::connect::{Connection, connect};
use crate::failure::Failure;
use crate::render::text;
use crate::signals::Interrupt;
use crate::verbs::{ListWhat, list_all};

/// Run `mcpflow inspect`; the exit code.
pub async fn run(server: &ServerArgs, verbose: bool, interrupt: &Interrupt) -> u8 {
    let builder = Client::builder("mcpflow-inspect", env!("CARGO_PKG_VERSION"));
    let conn = match connect(server, builder, interrupt).await {
        Ok(conn) => conn,
        Err(failure) => return failure.report(server.json),
    };
    // Each list is bounded by the request timeout; this bounds them all.
    let all = Duration::from_secs_f64(server.timeout * 4.0 + 5.0);
    let outcome = tokio::select! {
        r = tokio::time::timeout(all, describe(&conn, server.timeout)) => Some(r),
        () = interrupt.pressed() => None,
    };
    let (report, failures) = match outcome {
        None => {
            conn.close_hurried().await;
            return Failure::interrupted().report(server.json);
        }
        Some(Err(_)) => {
            conn.close_hurried().await;
            return Failure::connection(
                "listing the server's offerings did not finish; raise --timeout",
            )
            .report(server.json);
        }
        Some(Ok(described)) => described,
    };
    conn.close().await;
    if server.json {
        println!("{report}");
    } else {
        print_report(&report, verbose);
    }
    let mut code = 0;
    for (what, failure, optional) in &failures {
        let warning = if *optional { "warning: " } else { "" };
        errln!(
            "mcpflow: {warning}could not list {what}: {}",
            failure.message
        );
        if !optional {
            code = code.max(failure.exit);
        }
    }
    code
}

/// The report, and the lists that failed (name, failure, whether the list is optional).
async fn describe(conn: &Connection, timeout: f64) -> (Value, Vec<(&'static str, Failure, bool)>) {
    let init = conn.client.server_info();
    let caps = &init.capabilities;
    let mut report = json!({
        "serverInfo": serde_json::to_value(&init.server_info).unwrap_or(Value::Null),
        "protocolVersion": init.protocol_version.as_str(),
        "capabilities": serde_json::to_value(caps).unwrap_or(Value::Null),
    });
    if let Some(instructions) = &init.instructions {
        report["instructions"] = json!(instructions);
    }
    let mut wanted = Vec::new();
    if caps.tools.is_some() {
        wanted.push((ListWhat::Tools, false));
    }
    if caps.prompts.is_some() {
        wanted.push((ListWhat::Prompts, false));
    }
    if caps.resources.is_some() {
        wanted.push((ListWhat::Resources, false));
        // Many servers with resources have no templates and do not answer this method.
        wanted.push((ListWhat::Templates, true));
    }
    let mut failures = Vec::new();
    let mut errors = Map::new();
    let mut skipped = Vec::new();
    for (what, optional) in wanted {
        let (method, field) = what.method();
        match list_all(conn, method, field, timeout).await {
            Ok(listed) => {
                for line in &listed.skipped {
                    errln!("mcpflow: warning: {line}");
                }
                skipped.extend(listed.skipped);
                report[field] = Value::Array(listed.items);
            }
            Err(failure) => {
                errors.insert(
                    field.to_owned(),
                    json!({ "method": method, "message": failure.message, "optional": optional }),
                );
                failures.push((field, failure, optional));
            }
        }
    }
    if !errors.is_empty() {
        report["errors"] = Value::Object(errors);
    }
    if !skipped.is_empty() {
        report["skipped"] = json!(skipped);
    }
    (report, failures)
}

/// The first line of a description (the rest under `--verbose`).
pub fn first_line(description: &str) -> &str {
    description.trim().lines().next().unwrap_or("").trim()
}

/// One entry of a list, as `inspect` and `list` print it.
pub fn item_line(field: &str, item: &Value, verbose: bool) -> String {
    let head = match field {
        "tools" => {
            let schema = &item["inputSchema"];
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // Required parameters first, in the schema's order, then the optional ones.
            let mut params: Vec<String> = required.iter().map(|r| (*r).to_owned()).collect();
            if let Some(props) = schema["properties"].as_object() {
                params.extend(
                    props
                        .keys()
                        .filter(|k| !required.contains(&k.as_str()))
                        .map(|k| format!("{k}?")),
                );
            }
            format!("{}({})", text(item, "name"), params.join(", "))
        }
        "prompts" => {
            let args: Vec<String> = item["arguments"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|arg| {
                            let mark = if arg["required"].as_bool() == Some(true) {
                                ""
                            } else {
                                "?"
                            };
                            format!("{}{mark}", text(arg, "name"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{}({})", text(item, "name"), args.join(", "))
        }
        "resources" | "resourceTemplates" => {
            let address = if field == "resources" {
                text(item, "uri")
            } else {
                text(item, "uriTemplate")
            };
            let mime = text(item, "mimeType");
            let mut head = format!("{address} [{}]", text(item, "name"));
            if !mime.is_empty() {
                head.push(' ');
                head.push_str(mime);
            }
            head
        }
        _ => item.to_string(),
    };
    match item
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
    {
        Some(d) if !d.is_empty() && verbose => {
            let indented = d.lines().collect::<Vec<_>>().join("\n      ");
            format!("{head} - {indented}")
        }
        Some(d) if !d.is_empty() => format!("{head} - {}", first_line(d)),
        _ => head,
    }
}

fn print_report(report: &Value, verbose: bool) {
    let info = &report["serverInfo"];
    outln!("server: {} {}", text(info, "name"), text(info, "version"));
    outln!("protocol version: {}", text(report, "protocolVersion"));
    let caps: Vec<String> = report["capabilities"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    if v.as_object().is_some_and(|o| !o.is_empty()) {
                        format!("{k} {v}")
                    } else {
                        k.clone()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    outln!(
        "capabilities: {}",
        if caps.is_empty() {
            "(none)".to_owned()
        } else {
            caps.join(", ")
        }
    );
    if let Some(instructions) = report.get("instructions").and_then(Value::as_str) {
        if verbose {
            outln!("instructions: {instructions}");
        } else {
            outln!("instructions: {}", first_line(instructions));
        }
    }
    for (field, title) in [
        ("tools", "tools"),
        ("prompts", "prompts"),
        ("resources", "resources"),
        ("resourceTemplates", "resource templates"),
    ] {
        if let Some(items) = report.get(field).and_then(Value::as_array) {
            outln!("{title} ({}):", items.len());
            for item in items {
                outln!("  {}", item_line(field, item, verbose));
            }
        } else if report["errors"].get(field).is_some() {
            outln!("{title}: (could not be listed)");
        }
    }
}
