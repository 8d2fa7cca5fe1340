//! The requirement manifest: every engine guarantee of the architecture notes and every
//! MUST of the legacy-era specification (2024-11-05 … 2025-11-25) that applies to the
//! transports built so far (stdio, memory, streamable HTTP), each cited by the tests
//! that prove it.
//!
//! A citation is a test's name as `cargo test` prints it in its binary, `file::test_fn`:
//! the module is the test file's name (`seeds::…` is in `tests/engine/seeds.rs`, run with
//! `cargo test -p mcpflow --test engine seeds::`), and `SOURCES` says which binary holds
//! each file. `every_requirement_is_cited_by_a_test_that_exists` fails when a requirement
//! has no test, or cites a file its binary does not declare or a function there that is
//! not a test; `a_citation_that_names_no_test_is_reported` shows each of these failing.
//!
//! Engine scenarios run over memory capacity 0, 1 and large and over newline framing on
//! a socket pair (as stdio); the seed and re-entrancy scenarios also run under
//! randomized schedules (`chaos.rs`). Streamable HTTP requirements (S-http-*) are proven at the wire with a raw HTTP peer
//! (`http_server.rs`). Authorization and tasks requirements join when those land.

/// One requirement and the tests (`file::test_fn`) that prove it.
struct Requirement {
    id: &'static str,
    text: &'static str,
    tests: &'static [&'static str],
}

const REQUIREMENTS: &[Requirement] = &[
    // Engine guarantees (ARCHITECTURE.md section 2).
    Requirement {
        id: "G1",
        text: "the reader never waits on user code; its only await is the transport read",
        tests: &[
            "seeds::notification_handler_awaits_tools_list_on_every_transport",
            "seeds::sampling_during_call_whose_callback_lists_tools_on_every_transport",
            "engine::ten_thousand_peer_requests_at_once_bounded_with_busy_errors",
            "adversarial::server_facing_a_client_that_stops_reading_stays_bounded",
        ],
    },
    Requirement {
        id: "G2a",
        text: "notifications are handled one at a time, in receive order, apart from responses",
        tests: &[
            "engine::notifications_are_handled_one_at_a_time_in_receive_order",
            "engine::notifications_before_a_response_are_handled_after_the_barrier",
        ],
    },
    Requirement {
        id: "G2b",
        text: "a notification handler may await requests on the same connection (seed 001)",
        tests: &[
            "seeds::seed_001_list_changed_reload_during_call_memory_capacity_0",
            "seeds::seed_001_list_changed_reload_during_call_memory_capacity_1",
            "seeds::seed_001_list_changed_reload_during_call_over_stdio_framing",
            "seeds::notification_handler_awaits_tools_list_on_every_transport",
            "seeds::list_changed_handler_sees_the_new_tool_list_on_every_transport",
            "chaos::seed_and_reentrancy_scenarios_pass_under_randomized_schedules",
        ],
    },
    Requirement {
        id: "G2c",
        text: "a request's progress is delivered in order and before its response (seed 000)",
        tests: &[
            "seeds::seed_000_progress_before_response_memory_capacity_0",
            "seeds::seed_000_progress_before_response_memory_capacity_1",
            "seeds::seed_000_progress_before_response_memory_large",
            "seeds::seed_000_progress_before_response_over_stdio_framing",
            "engine::ten_thousand_progress_notifications_delivered_in_order_before_the_result",
            "client::progress_as_a_stream_then_the_result",
        ],
    },
    Requirement {
        id: "G3a",
        text: "peer requests run under a limit, then a bounded queue, then a busy error at once",
        tests: &["engine::ten_thousand_peer_requests_at_once_bounded_with_busy_errors"],
    },
    Requirement {
        id: "G3b",
        text: "list_changed notifications coalesce losslessly; a burst costs at most two re-lists",
        tests: &["engine::burst_of_100_list_changed_costs_at_most_two_tools_list_requests"],
    },
    Requirement {
        id: "G4",
        text: "one writer owns the sink and flushes once per batch; a stalled peer slows senders only",
        tests: &[
            "engine::writer_batches_frames_and_flushes_once_per_batch",
            "adversarial::server_facing_a_client_that_stops_reading_stays_bounded",
        ],
    },
    Requirement {
        id: "G5",
        text: "the engine runs before the handshake: initialize handlers and pre-initialize notifications may send and await",
        tests: &[
            "seeds::initialize_handler_sends_and_awaits_a_log_notification",
            "seeds::client_log_handler_awaits_tools_list_before_initialize_result",
            "adversarial::client_survives_a_misbehaving_server",
        ],
    },
    Requirement {
        id: "G6a",
        text: "every request has a default timeout, reset by progress, capped by a maximum total",
        tests: &[
            "engine::progress_resets_the_timeout_and_max_total_caps_it",
            "adversarial::client_times_out_against_a_server_that_never_answers",
        ],
    },
    Requirement {
        id: "G6b",
        text: "timing out or dropping a request sends notifications/cancelled; the server observes it",
        tests: &[
            "engine::request_times_out_and_the_server_observes_cancellation",
            "engine::dropping_a_call_sends_cancelled",
        ],
    },
    Requirement {
        id: "G6c",
        text: "initialize is never cancelled",
        tests: &["client::initialize_is_never_cancelled_even_on_timeout"],
    },
    Requirement {
        id: "G6d",
        text: "a late response is ignored",
        tests: &[
            "engine::late_response_after_timeout_is_ignored",
            "adversarial::client_survives_a_misbehaving_server",
        ],
    },
    Requirement {
        id: "G6e",
        text: "on every exit path every pending request fails at once, naming the cause (exit status and stderr tail)",
        tests: &[
            "engine::every_pending_request_fails_at_once_when_the_peer_closes",
            "engine::child_killed_mid_call_fails_the_call_with_exit_status_and_stderr_tail",
            "transport::a_server_exiting_during_the_handshake_names_its_status_and_stderr",
        ],
    },
    Requirement {
        id: "G7",
        text: "close is orderly and bounded; the child is reaped (stdin, SIGTERM, SIGKILL)",
        tests: &[
            "engine::close_is_bounded_when_a_handler_ignores_cancellation",
            "transport::close_escalates_to_sigkill_for_a_server_that_ignores_stdin_and_sigterm",
            "transport::close_ends_a_well_behaved_server_by_closing_stdin",
        ],
    },
    Requirement {
        id: "G8",
        text: "bad input gets a clear JSON-RPC error or a log line; the connection keeps serving",
        tests: &[
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
            "engine::malformed_input_is_answered_and_the_connection_keeps_serving",
            "adversarial::client_survives_a_misbehaving_server",
        ],
    },
    // Specification MUSTs, legacy era (shared/notes/spec.md Part B and section 1).
    Requirement {
        id: "S-jsonrpc-id",
        text: "request ids are strings or integers, never null; responses carry the request's id",
        tests: &[
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
        ],
    },
    Requirement {
        id: "S-no-reply-to-notifications",
        text: "the receiver of a notification MUST NOT respond",
        tests: &[
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
        ],
    },
    Requirement {
        id: "S-batch-2025-03-26",
        text: "under 2025-03-26 implementations MUST support receiving JSON-RPC batches (and only then), answer a batch with one array, and refuse initialize inside one",
        tests: &[
            "server::batches_are_received_under_2025_03_26_only",
            "handshake_era::a_batch_on_a_byte_stream_is_answered_with_one_array",
            "http_server::malformed_requests_get_clear_http_errors_and_the_session_survives",
        ],
    },
    Requirement {
        id: "S-init-once",
        text: "initialize is sent once per connection: a second one is refused and changes nothing",
        tests: &[
            "handshake_era::a_second_initialize_on_one_connection_is_refused_and_changes_nothing",
        ],
    },
    Requirement {
        id: "S-version-fields",
        text: "a peer is sent only the fields its negotiated version defines (2024-11-05: no completions capability, no progress message, no serverInfo title)",
        tests: &["handshake_era::a_2024_11_05_peer_gets_only_what_that_version_defines"],
    },
    Requirement {
        id: "S-init-first",
        text: "the client sends initialize first, then notifications/initialized",
        tests: &["client::client_accepts_every_handshake_version_the_server_picks"],
    },
    Requirement {
        id: "S-init-version",
        text: "the server answers initialize with the requested version if supported, else another it supports",
        tests: &["client::server_negotiates_the_protocol_version"],
    },
    Requirement {
        id: "S-client-version",
        text: "the client accepts the versions it speaks and disconnects on one it does not",
        tests: &[
            "client::client_accepts_every_handshake_version_the_server_picks",
            "client::client_rejects_a_version_it_does_not_speak",
        ],
    },
    Requirement {
        id: "S-capabilities",
        text: "implemented features are declared; only negotiated capabilities are used",
        tests: &[
            "server::capabilities_follow_what_is_registered",
            "client::sampling_without_a_handler_is_refused_at_once",
            "adversarial::client_refuses_what_it_did_not_declare",
        ],
    },
    Requirement {
        id: "S-ping",
        text: "the receiver of ping MUST respond promptly, even before initialization completes",
        tests: &[
            "server::requests_before_initialize_are_served",
            "adversarial::client_survives_a_misbehaving_server",
        ],
    },
    Requirement {
        id: "S-no-cancel-initialize",
        text: "initialize MUST NOT be cancelled",
        tests: &["client::initialize_is_never_cancelled_even_on_timeout"],
    },
    Requirement {
        id: "S-cancelled-not-answered",
        text: "a cancelled request is not answered; invalid or racing cancellations are ignored",
        tests: &["adversarial::a_cancelled_request_is_not_answered"],
    },
    Requirement {
        id: "S-progress",
        text: "progress references the request's token (same JSON type), increases, and stops at completion",
        tests: &[
            "seeds::seed_000_progress_before_response_memory_capacity_0",
            "engine::ten_thousand_progress_notifications_delivered_in_order_before_the_result",
        ],
    },
    Requirement {
        id: "S-cursor",
        text: "cursors are opaque to clients; an invalid cursor gets -32602",
        tests: &[
            "client::list_helpers_follow_every_page",
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
        ],
    },
    Requirement {
        id: "S-logging-level",
        text: "after logging/setLevel the server sends only messages at or above the level",
        tests: &["server::log_level_filters_messages"],
    },
    Requirement {
        id: "S-unknown-method",
        text: "unknown or unsupported methods get -32601 (server/discover probes included)",
        tests: &[
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
        ],
    },
    Requirement {
        id: "S-tool-errors",
        text: "an unknown tool is -32602; missing prompt arguments are -32602; an unknown resource is -32002",
        tests: &[
            "bad_input::every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving",
            "client::prompts_check_required_arguments_and_complete",
            "server::resources_templates_and_subscriptions",
        ],
    },
    Requirement {
        id: "S-tool-input-validation",
        text: "tool arguments are validated against inputSchema; 2025-11-25 reports violations as tool errors (SEP-1303)",
        tests: &["server::arguments_are_validated_against_the_input_schema"],
    },
    Requirement {
        id: "S-subscribe",
        text: "resources/updated goes only to clients subscribed to that URI, also when announced from outside any handler",
        tests: &[
            "server::resources_templates_and_subscriptions",
            "handshake_era::a_resource_update_announced_from_outside_reaches_only_its_subscribers",
        ],
    },
    Requirement {
        id: "S-elicitation-modes",
        text: "a server MUST NOT send an elicitation mode the client did not declare; a client answers one with -32602",
        tests: &[
            "client::elicitation_form_mode_and_undeclared_url_mode",
            "adversarial::client_refuses_what_it_did_not_declare",
        ],
    },
    Requirement {
        id: "S-sampling-tools",
        text: "a client MUST error on sampling with tools when it did not declare sampling.tools; a server sends tools only to a client that declared it, and one that did runs the tool loop",
        tests: &[
            "adversarial::client_refuses_what_it_did_not_declare",
            "handshake_era::a_client_without_sampling_tools_is_never_sent_tools",
            "handshake_era::sampling_with_tools_runs_a_tool_loop_over_every_transport",
        ],
    },
    Requirement {
        id: "S-url-elicitation",
        text: "a -32042 error carries URL elicitations the client shows before the caller sees the error; notifications/elicitation/complete reaches the client",
        tests: &[
            "handshake_era::url_elicitation_required_reaches_the_handler_and_completion_allows_the_retry",
        ],
    },
    Requirement {
        id: "S-structured-output",
        text: "a client checks structuredContent against the tool's outputSchema even on a first call; an outputSchema has an object root",
        tests: &[
            "handshake_era::structured_output_is_checked_on_a_first_call_without_a_listed_tool",
            "handshake_era::a_non_object_structured_result_travels_wrapped_and_reads_back_typed",
        ],
    },
    Requirement {
        id: "S-roots-list-changed",
        text: "a client that declared roots.listChanged sends notifications/roots/list_changed",
        tests: &["client::roots_are_served_and_changes_announced"],
    },
    Requirement {
        id: "S-stdio-stdout",
        text: "over stdio the server writes only valid MCP messages to stdout (logs go to stderr)",
        tests: &[
            "cli::call_with_progress_counts_progress_notifications",
            "cli::inspect_json_lists_everything",
        ],
    },
    Requirement {
        id: "S-stdio-shutdown",
        text: "the client shuts a stdio server down by closing stdin, then SIGTERM, then SIGKILL",
        tests: &[
            "transport::close_escalates_to_sigkill_for_a_server_that_ignores_stdin_and_sigterm",
        ],
    },
    // Streamable HTTP (2025-03-26 and later; SEP-1699 resumability of 2025-11-25).
    Requirement {
        id: "S-http-session",
        text: "a session id from a CSPRNG at initialize; 400 for other requests without one; 404 for an unknown or terminated one; DELETE ends it",
        tests: &["http_server::sessions_start_at_initialize_and_end_with_delete"],
    },
    Requirement {
        id: "S-http-origin",
        text: "the server validates Origin (and Host on loopback) against DNS rebinding, refusing with 403",
        tests: &["http_server::dns_rebinding_is_refused_unless_allow_listed"],
    },
    Requirement {
        id: "S-http-post",
        text: "notifications and responses alone get 202; requests get an event stream or one JSON body carrying every response",
        tests: &[
            "http_server::sessions_start_at_initialize_and_end_with_delete",
            "http_server::json_responses_and_stateless_mode",
            "http_server::a_server_request_rides_the_stream_of_the_call_that_made_it",
        ],
    },
    Requirement {
        id: "S-http-stream",
        text: "a request's stream carries its related messages before its response, then ends; a server request is sent on the stream of the request it relates to",
        tests: &[
            "http_server::progress_precedes_the_result_on_a_primed_stream_that_then_ends",
            "http_server::a_server_request_rides_the_stream_of_the_call_that_made_it",
            "http_server::cancelling_a_call_ends_its_stream",
        ],
    },
    Requirement {
        id: "S-http-resume",
        text: "events carry ids unique in the session; a priming event and retry open a stream; GET with Last-Event-ID replays that stream only, after that id",
        tests: &["http_server::a_stream_ended_mid_call_resumes_with_last_event_id"],
    },
    Requirement {
        id: "S-http-get",
        text: "GET opens one standalone stream for messages unrelated to a request",
        tests: &["http_server::the_standalone_stream_carries_list_changed_and_is_unique"],
    },
    Requirement {
        id: "S-http-headers",
        text: "an unsupported MCP-Protocol-Version, or one other than the session's, gets 400; wrong Content-Type, Accept and oversized bodies get 415, 406 and 413",
        tests: &["http_server::malformed_requests_get_clear_http_errors_and_the_session_survives"],
    },
    Requirement {
        id: "G6-http",
        text: "over HTTP, every failure (error status, a stream ended with nothing to resume, exhausted reconnects, a refused or reset connection, an idle stream, a server gone mid-call) fails the pending request at once with its cause",
        tests: &[
            "http_client::http_error_status_fails_the_request_with_status_and_body",
            "http_client::stream_ended_without_event_id_fails_the_request",
            "http_client::exhausted_reconnects_fail_the_request",
            "http_client::refused_connection_fails_at_once",
            "http_client::server_gone_mid_session_fails_requests_promptly",
            "http_client::connection_reset_mid_stream_fails_the_request",
            "http_client::idle_event_stream_fails_the_request",
            "http_engine::a_server_that_goes_away_mid_call_fails_the_call_with_the_cause",
        ],
    },
    Requirement {
        id: "S-http-client",
        text: "the client POSTs with Accept for JSON and event streams, then sends Mcp-Session-Id and MCP-Protocol-Version on every request, and DELETE at close",
        tests: &[
            "http_client::happy_path_over_json_and_event_streams",
            "http_client::close_sends_delete_with_the_session_id",
        ],
    },
    Requirement {
        id: "S-http-client-resume",
        text: "a client resumes a broken stream with GET and Last-Event-ID; on 404 for its session it starts a new one with initialize",
        tests: &[
            "http_client::resumes_with_last_event_id_after_the_stream_closes_mid_call",
            "http_client::reinitializes_transparently_on_404",
            "http_engine::a_session_lost_in_a_server_restart_is_replaced_transparently",
        ],
    },
    Requirement {
        id: "S-http-legacy",
        text: "a client falls back to HTTP+SSE (2024-11-05) when the first POST fails with 400, 404 or 405",
        tests: &[
            "http_client::legacy_sse_fallback_end_to_end",
            "http_client::legacy_stream_end_fails_pending_requests",
        ],
    },
    Requirement {
        id: "G-http-seeds",
        text: "the seed scenarios and re-entrant callbacks hold over streamable HTTP",
        tests: &[
            "seeds::seed_000_progress_before_response_over_http",
            "seeds::list_changed_handler_sees_the_new_tool_list_on_every_transport",
            "seeds::notification_handler_awaits_tools_list_on_every_transport",
            "seeds::sampling_during_call_whose_callback_lists_tools_on_every_transport",
            "engine::ten_thousand_progress_notifications_delivered_in_order_before_the_result",
        ],
    },
];

/// A test file a citation may name: its module, the binary it belongs to, the source of
/// the file that declares the module, and its own source, read at compile time.
struct Source {
    module: &'static str,
    binary: &'static str,
    parent: &'static str,
    text: &'static str,
}

/// `tests/<binary>/<module>.rs` of this crate, declared in the binary's `main.rs`.
macro_rules! source {
    ($binary:literal, $module:literal) => {
        Source {
            module: $module,
            binary: $binary,
            parent: include_str!(concat!("../", $binary, "/main.rs")),
            text: include_str!(concat!("../", $binary, "/", $module, ".rs")),
        }
    };
}

const SOURCES: &[Source] = &[
    source!("engine", "seeds"),
    source!("engine", "engine"),
    source!("engine", "transport"),
    source!("engine", "bad_input"),
    source!("engine", "adversarial"),
    source!("engine", "chaos"),
    source!("client", "client"),
    source!("server", "server"),
    source!("http", "http_server"),
    source!("http", "http_client"),
    source!("http", "http_engine"),
    source!("eras", "handshake_era"),
    Source {
        module: "cli",
        binary: "commands (mcpflow-cli)",
        parent: include_str!("../../../mcpflow-cli/tests/commands/main.rs"),
        text: include_str!("../../../mcpflow-cli/tests/commands/cli.rs"),
    },
];

/// What is wrong with `citation` (`module::test_fn`, or `module::inner::test_fn` for a test
/// in an inline module), if anything: a file that is not in `sources`, a file its binary
/// does not declare, or a function that is not a test in that file.
fn check(citation: &str, sources: &[Source]) -> Result<(), String> {
    let Some((path, name)) = citation.rsplit_once("::") else {
        return Err(format!("malformed citation {citation}"));
    };
    let mut module = path;
    let source = loop {
        if let Some(source) = sources.iter().find(|s| s.module == module) {
            break source;
        }
        let Some((outer, _)) = module.rsplit_once("::") else {
            return Err(format!("cites {citation}, but no test file is `{path}`"));
        };
        module = outer;
    };
    let leaf = source.module.rsplit("::").next().unwrap_or(source.module);
    let declaration = format!("mod {leaf};");
    if !source.parent.lines().any(|l| l.trim() == declaration) {
        return Err(format!(
            "cites {citation}, but the {} binary does not declare `{declaration}`",
            source.binary
        ));
    }
    if !defines_test(source.text, name) {
        return Err(format!("cites {citation}, which is not a test"));
    }
    Ok(())
}

/// Whether `text` has `fn name(` under a `#[test]` or `#[tokio::test]` attribute (other
/// attributes and doc comments may come between).
fn defines_test(text: &str, name: &str) -> bool {
    let definition = format!("fn {name}(");
    text.match_indices(&definition).any(|(at, _)| {
        // The lines above the definition's own (which may start with `async `).
        let above = &text[..text[..at].rfind('\n').unwrap_or(0)];
        above
            .lines()
            .rev()
            .map(str::trim)
            .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
            .any(|l| l.starts_with("#[") && (l.contains("test]") || l.contains("test(")))
    })
}

/// Every problem of `requirements` against `sources`.
fn problems(requirements: &[Requirement], sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    for r in requirements {
        if r.tests.is_empty() {
            problems.push(format!("{} ({}) has no test", r.id, r.text));
        }
        for citation in r.tests {
            if let Err(problem) = check(citation, sources) {
                problems.push(format!("{}: {problem}", r.id));
            }
        }
    }
    problems
}

#[test]
fn every_requirement_is_cited_by_a_test_that_exists() {
    let modules: std::collections::HashSet<_> = SOURCES.iter().map(|s| s.module).collect();
    assert_eq!(modules.len(), SOURCES.len(), "test file modules are unique");
    let ids: std::collections::HashSet<_> = REQUIREMENTS.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), REQUIREMENTS.len(), "requirement ids are unique");
    let problems = problems(REQUIREMENTS, SOURCES);
    let engine = REQUIREMENTS
        .iter()
        .filter(|r| r.id.starts_with('G'))
        .count();
    println!(
        "{} requirements ({engine} engine guarantees, {} spec MUSTs), all cited",
        REQUIREMENTS.len(),
        REQUIREMENTS.len() - engine
    );
    assert!(
        problems.is_empty(),
        "uncovered requirements:\n{}",
        problems.join("\n")
    );
}

/// The check above can fail: each way a citation can be wrong is reported, and a right one
/// is not.
#[test]
fn a_citation_that_names_no_test_is_reported() {
    let file = "//! A test file.\n\n#[tokio::test(start_paused = true)]\nasync fn proven() {}\n\n\
                /// A helper.\nfn helper() {}\n\n#[cfg(unix)]\n#[test]\nfn also_proven() {}\n";
    let sources = [
        Source {
            module: "listed",
            binary: "engine",
            parent: "mod listed;\nmod other;\n",
            text: file,
        },
        Source {
            module: "orphan",
            binary: "engine",
            parent: "mod listed;\n",
            text: file,
        },
    ];
    let cited = [
        Requirement {
            id: "R1",
            text: "cited right",
            tests: &["listed::proven", "listed::also_proven"],
        },
        Requirement {
            id: "R2",
            text: "cited wrong",
            tests: &[
                "listed::missing",
                "listed::helper",
                "orphan::proven",
                "unlisted::proven",
                "proven",
            ],
        },
        Requirement {
            id: "R3",
            text: "not cited",
            tests: &[],
        },
    ];
    let problems = problems(&cited, &sources);
    let expected = [
        "R2: cites listed::missing, which is not a test",
        "R2: cites listed::helper, which is not a test",
        "R2: cites orphan::proven, but the engine binary does not declare `mod orphan;`",
        "R2: cites unlisted::proven, but no test file is `unlisted`",
        "R2: malformed citation proven",
        "R3 (not cited) has no test",
    ];
    assert_eq!(problems, expected);
}
