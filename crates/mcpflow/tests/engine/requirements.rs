//! The requirement manifest: every engine guarantee of the architecture notes, every
//! MUST of the handshake-era specification (2024-11-05 … 2025-11-25) that applies to the
//! transports built so far (stdio, memory, streamable HTTP), and the MUSTs of the
//! 2026-07-28 per-request era, of tasks (2025-11-25 and the 2026-07-28 extension) and of
//! authorization that tests prove, each cited by the tests that prove it. MUSTs of those
//! three parts that no test proves yet are not listed.
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
//! (`http_server.rs`). The per-request era (S-era-*) is proven at the wire with a raw
//! peer over newline framing and HTTP (`era_2026.rs`, `tasks_2026.rs`) and against
//! scripted servers (`client_2026.rs`); authorization (S-auth-*) against local
//! authorization servers, the JWT verifier under the `jwt` feature.

/// One requirement and the tests (`file::test_fn`) that prove it.
struct Requirement {
    id: &'static str,
    text: &'static str,
    tests: &'static [&'static str],
}

const REQUIREMENTS: &[Requirement] = &[
    // Engine guarantees (docs/architecture.md, The engine, Guarantees).
    Requirement {
        id: "G1",
        text: "the reader never waits on user code; its only await is the transport read",
        tests: &[
            "seeds::notification_handler_awaits_tools_list_on_every_transport",
            "seeds::sampling_during_call_whose_callback_lists_tools_on_every_transport",
            "engine::ten_thousand_peer_requests_at_once_bounded_with_busy_errors",
            "adversarial::server_facing_a_client_that_stops_reading_stays_bounded",
            "routed::a_routed_request_that_waits_goes_on_as_a_task_of_its_own",
            "routed::the_sessions_own_replies_to_a_routed_frame_reach_the_peer",
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
            "transport::a_server_exiting_with_its_stdout_held_by_a_child_fails_the_call_with_its_status",
            "transport::a_server_closing_its_stdin_is_named_for_it",
        ],
    },
    Requirement {
        id: "G7",
        text: "close is orderly and bounded; the child is reaped (stdin, SIGTERM, SIGKILL), and what it left holding its stdout gets SIGTERM",
        tests: &[
            "engine::close_is_bounded_when_a_handler_ignores_cancellation",
            "transport::close_escalates_to_sigkill_for_a_server_that_ignores_stdin_and_sigterm",
            "transport::close_ends_a_well_behaved_server_by_closing_stdin",
            "transport::close_ends_a_helper_that_holds_the_servers_stdout",
            "transport::a_close_during_the_exit_drain_ends_the_process_holding_stdout",
            "transport::close_lets_a_server_still_writing_see_its_stdin_close",
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
    // Specification MUSTs, handshake era (the MCP specification, 2024-11-05 to 2025-11-25).
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
    // The 2026-07-28 per-request era (the MCP specification, 2026-07-28).
    Requirement {
        id: "S-era-discover",
        text: "a server implements server/discover: its supported versions, its capabilities and serverInfo in _meta",
        tests: &[
            "era_2026::discover_answers_versions_capabilities_and_cache_hints",
            "era_2026::http_serves_per_request_posts_without_a_session_and_checks_headers",
        ],
    },
    Requirement {
        id: "S-era-envelope",
        text: "a request without protocolVersion or clientCapabilities in its _meta is refused with -32602 (over HTTP with 400)",
        tests: &[
            "era_2026::the_envelope_is_read_per_request_and_refused_when_wrong",
            "era_2026::http_serves_per_request_posts_without_a_session_and_checks_headers",
        ],
    },
    Requirement {
        id: "S-era-version",
        text: "an unsupported protocolVersion is refused with -32022, naming the supported and the requested versions",
        tests: &["era_2026::the_envelope_is_read_per_request_and_refused_when_wrong"],
    },
    Requirement {
        id: "S-era-stateless",
        text: "a server takes version, client and capabilities from each request's envelope, never from earlier requests on the connection, an initialize on it included",
        tests: &[
            "era_2026::the_envelope_is_read_per_request_and_refused_when_wrong",
            "era_2026::a_handshake_client_on_the_same_stream_still_gets_requests",
        ],
    },
    Requirement {
        id: "S-era-missing-capability",
        text: "when a request needs a client capability its envelope does not declare, the server answers -32021 with data.requiredCapabilities (over HTTP with 400) instead of asking for it",
        tests: &[
            "era_2026::the_envelope_is_read_per_request_and_refused_when_wrong",
            "era_2026::http_serves_per_request_posts_without_a_session_and_checks_headers",
        ],
    },
    Requirement {
        id: "S-era-unknown-method",
        text: "an unknown method, or one the era removed (initialize, logging/setLevel, resources/subscribe), is -32601; over HTTP with 404",
        tests: &[
            "era_2026::the_envelope_is_read_per_request_and_refused_when_wrong",
            "era_2026::http_serves_per_request_posts_without_a_session_and_checks_headers",
        ],
    },
    Requirement {
        id: "S-era-result-type",
        text: "every result carries resultType; a client reads a result without one as complete",
        tests: &[
            "era_2026::results_carry_result_type_and_cache_hints",
            "era_2026::discover_answers_versions_capabilities_and_cache_hints",
            "client_2026::a_discover_result_means_per_request_and_every_request_carries_the_envelope",
        ],
    },
    Requirement {
        id: "S-era-cache-hints",
        text: "server/discover, tools/list and resources/read results carry ttlMs and cacheScope; input_required and tools/call results carry none",
        tests: &[
            "era_2026::discover_answers_versions_capabilities_and_cache_hints",
            "era_2026::results_carry_result_type_and_cache_hints",
            "era_2026::one_elicitation_is_one_round",
        ],
    },
    Requirement {
        id: "S-era-input-required",
        text: "an input_required result names its input requests under keys unique in the request, with a requestState; the retry carrying the answers and the state completes the call",
        tests: &[
            "era_2026::one_elicitation_is_one_round",
            "era_2026::joined_elicitations_are_asked_in_one_round",
            "era_2026::sequential_elicitations_take_two_rounds_and_the_state_carries_the_first",
        ],
    },
    Requirement {
        id: "S-era-request-state",
        text: "requestState is attacker-controlled: a state altered, or minted for another request, is refused",
        tests: &["era_2026::tampered_or_foreign_state_is_refused_and_missing_answers_asked_again"],
    },
    Requirement {
        id: "S-era-state-instances",
        text: "a requestState opens on every instance sharing the key ring and the server name, and on no other; a ring rotates its sealing key without failing a round in flight",
        tests: &[
            "instances_2026::a_round_continues_on_another_instance_with_the_same_key_ring_only",
            "instances_2026::a_key_rotation_fails_no_round_in_flight",
        ],
    },
    Requirement {
        id: "S-era-listen-instances",
        text: "with a notification bus, a list change announced on one instance reaches the listen streams of every instance once, after their acknowledgements",
        tests: &["instances_2026::an_announcement_reaches_every_instances_listen_streams_once"],
    },
    Requirement {
        id: "S-era-single-use-state",
        text: "servers for which a requestState must be consumed at most once enforce it server-side: a retry with a single-use state is answered once and refused after, on every instance sharing the consumed states",
        tests: &[
            "instances_2026::a_single_use_state_is_accepted_once",
            "instances_2026::a_single_use_state_is_accepted_once_across_instances",
        ],
    },
    Requirement {
        id: "S-era-store-free",
        text: "a 2026-07-28 request that asks for no input asks a shared session store nothing",
        tests: &["instances_2026::a_plain_2026_call_asks_the_session_store_nothing"],
    },
    Requirement {
        id: "S-fleet-sessions",
        text: "with a shared session store, any instance serves any request of a handshake-era session",
        tests: &["fleet_sessions::a_thousand_sessions_hop_across_three_instances_without_an_error"],
    },
    Requirement {
        id: "S-fleet-resume",
        text: "a stream resumes on any instance from the store with every event once and in order; when the instance writing it is gone, each response it owed is an error",
        tests: &[
            "fleet_sessions::a_stream_of_a_killed_instance_resumes_on_another_with_every_event_once_then_an_error",
        ],
    },
    Requirement {
        id: "S-fleet-replay",
        text: "a Last-Event-ID of another session or another stream replays nothing, on any instance",
        tests: &["fleet_sessions::another_sessions_or_streams_last_event_id_replays_nothing"],
    },
    Requirement {
        id: "S-fleet-answers",
        text: "a client's answer to a server-to-client request reaches the instance whose handler waits for it, whichever instance it is posted to",
        tests: &["fleet_sessions::a_thousand_elicitations_are_answered_through_another_instance"],
    },
    Requirement {
        id: "S-fleet-store-down",
        text: "while the store is unreachable, session requests get 503 with Retry-After and 2026-07-28 requests without input are served; after it returns the instances reconnect by themselves, and sessions survive only a restart with persistence",
        tests: &[
            "fleet_sessions::redis_down_is_503_with_retry_after_and_sessions_follow_its_persistence",
        ],
    },
    Requirement {
        id: "S-fleet-cap",
        text: "max_sessions counts the sessions of every instance sharing the store: at the cap a new session is refused 503 with Retry-After while every session is in use, and takes the place of the least recently used once it is idle",
        tests: &["fleet_sessions::the_session_cap_counts_every_instances_sessions"],
    },
    Requirement {
        id: "S-fleet-memory",
        text: "the store holds nothing of a session once it is deleted or idle past its timeout: its record and its streams' logs go with it",
        tests: &["fleet_sessions::redis_holds_nothing_of_ended_or_idle_sessions_after_a_soak"],
    },
    Requirement {
        id: "S-fleet-tasks",
        text: "with a shared task store, a task answers tasks/get on every instance once CreateTaskResult is out; tasks/update and tasks/cancel on any instance reach the one running it; a task whose instance is gone reads as failed; with a bus, its notifications/tasks reach the listen streams of every instance once",
        tests: &[
            "fleet_tasks::a_task_made_on_one_instance_is_read_updated_and_cancelled_on_the_others",
            "fleet_tasks::a_task_whose_instance_was_killed_reads_as_failed",
            "fleet_tasks::a_tasks_notifications_reach_listen_streams_on_every_instance_once",
        ],
    },
    Requirement {
        id: "S-otel-trace",
        text: "with the otel feature, a request's client span is the parent of its server span through traceparent in _meta, in both eras, within the caller's trace; malformed trace context is ignored",
        tests: &[
            "spans::a_call_continues_the_callers_trace_in_both_eras",
            "spans::malformed_trace_context_is_ignored",
            "otel_peers::python_client_traces_continue_into_mcpflow",
            "otel_peers::mcpflow_client_traces_continue_into_the_python_server",
        ],
    },
    Requirement {
        id: "S-otel-nesting",
        text: "a server-to-client request is a child of the handler's server span; a task's later requests link to the call that created it; the tool host's execute_tool span parents the call's client span",
        tests: &[
            "spans::a_server_to_client_request_is_a_child_of_the_handlers_span",
            "spans::a_tasks_polls_link_to_the_call_that_started_it",
            "conventions::the_tool_hosts_call_span_parents_the_servers_span",
        ],
    },
    Requirement {
        id: "S-otel-attributes",
        text: "every span carries the attributes the semantic conventions for MCP require of its method and none they do not define; errors are recorded as they say",
        tests: &[
            "conventions::every_span_carries_what_the_conventions_require",
            "spans::errors_are_recorded_as_the_conventions_say",
            "spans::notifications_have_spans_without_an_id",
            "spans::http_spans_carry_the_session_and_the_server_is_measured",
        ],
    },
    Requirement {
        id: "S-otel-metrics",
        text: "the four MCP duration histograms are recorded in seconds with the conventions' buckets, and the HTTP server's statistics are instruments",
        tests: &[
            "spans::operation_durations_are_recorded",
            "spans::http_spans_carry_the_session_and_the_server_is_measured",
        ],
    },
    Requirement {
        id: "S-era-client-input",
        text: "the client fulfils every input request before it retries, echoes requestState exactly (none when none was given) and retries with a new id",
        tests: &["client_2026::input_required_is_fulfilled_with_each_callback_over_several_rounds"],
    },
    Requirement {
        id: "S-era-client-envelope",
        text: "the client puts protocolVersion, clientCapabilities and clientInfo in every request's _meta, and sends no initialize",
        tests: &[
            "client_2026::a_discover_result_means_per_request_and_every_request_carries_the_envelope",
            "client_2026::input_required_is_fulfilled_with_each_callback_over_several_rounds",
            "client_2026::list_changes_arrive_on_a_listen_stream",
        ],
    },
    Requirement {
        id: "S-era-detection",
        text: "a probing client takes a discover result or a per-request error (-32022: a version from supported) as the per-request era and does not fall back; any other answer, or none, means initialize, the fallback keyed to no single code; over HTTP a 400 with an empty body means the handshake",
        tests: &[
            "client_2026::a_discover_result_means_per_request_and_every_request_carries_the_envelope",
            "client_2026::an_unsupported_version_error_means_per_request_with_a_version_from_supported",
            "client_2026::method_not_found_means_the_handshake",
            "client_2026::no_answer_to_the_probe_means_the_handshake",
            "client_2026::http::a_400_with_a_per_request_error_means_per_request_and_requests_carry_the_headers",
            "client_2026::http::a_400_with_an_empty_body_means_the_handshake",
        ],
    },
    Requirement {
        id: "S-era-log-level",
        text: "a server sends notifications/message for a request only when its _meta carries a logLevel, only at or above it, and before the answer",
        tests: &[
            "era_2026::log_messages_need_a_log_level",
            "client_2026_gaps::set_logging_level_sets_the_per_request_log_level",
        ],
    },
    Requirement {
        id: "S-era-listen",
        text: "a subscriptions/listen stream starts with its acknowledgement, which lists the part of the filter honoured; each notification on it carries the subscriptionId; resource updates go only to the URIs subscribed",
        tests: &[
            "era_2026::listen_acknowledges_then_streams_tagged_changes_until_closed",
            "era_2026::http_listen_is_an_event_stream_fed_from_outside",
            "client_2026_gaps::a_per_request_subscription_receives_only_its_resource_updates",
        ],
    },
    Requirement {
        id: "S-era-cancel",
        text: "a request the client gives up on (its timeout) is cancelled at the server on every transport; a listen stream is ended with notifications/cancelled naming it; over HTTP a response stream the client closes is a cancellation",
        tests: &[
            "seeds_2026::timeout_reaches_the_handler_in_memory",
            "seeds_2026::timeout_reaches_the_handler_over_stdio_framing_and_http",
            "era_2026::http_a_sessionless_call_abandoned_by_its_client_ends",
            "client_2026::list_changes_arrive_on_a_listen_stream",
        ],
    },
    Requirement {
        id: "S-era-http-headers",
        text: "over HTTP the server checks MCP-Protocol-Version, Mcp-Method and Mcp-Name (the taskId on tasks/*) against the body, decoding base64 values first; a missing or disagreeing header is 400 with -32020",
        tests: &[
            "era_2026::http_serves_per_request_posts_without_a_session_and_checks_headers",
            "tasks_2026::over_http_a_task_outlives_its_post_and_mcp_name_carries_the_task_id",
        ],
    },
    Requirement {
        id: "S-era-http-client-headers",
        text: "the HTTP client sends MCP-Protocol-Version, Mcp-Method, Mcp-Name and an Mcp-Param-* header for each x-mcp-header argument present (base64 where not plain ASCII), and drops a tool whose x-mcp-header is invalid",
        tests: &[
            "client_2026::http::a_400_with_a_per_request_error_means_per_request_and_requests_carry_the_headers",
        ],
    },
    Requirement {
        id: "G-era-seeds",
        text: "the seed scenarios hold in the per-request era over every transport: progress before the response, a list change reloaded during a call, a timeout reaching the handler, input rounds while other calls run",
        tests: &[
            "seeds_2026::progress_before_response_on_every_transport",
            "seeds_2026::list_change_reloaded_during_a_long_call_on_every_transport",
            "seeds_2026::timeout_reaches_the_handler_in_memory",
            "seeds_2026::timeout_reaches_the_handler_over_stdio_framing_and_http",
            "seeds_2026::elicitation_while_other_calls_run_on_every_transport",
        ],
    },
    // Tasks: 2025-11-25, experimental (the MCP specification, 2025-11-25, utilities/tasks).
    Requirement {
        id: "S-task-support",
        text: "a tool's taskSupport is enforced: a required one called without a task, or a forbidden one called as a task, is -32601",
        tests: &["tasks::task_support_is_enforced_and_unknown_tasks_refused"],
    },
    Requirement {
        id: "S-task-no-capability",
        text: "a receiver without the tasks capability processes a task-augmented request normally, ignoring task",
        tests: &[
            "tasks::a_server_without_task_tools_ignores_the_task_param_and_has_no_task_methods",
        ],
    },
    Requirement {
        id: "S-task-fields",
        text: "a task has a receiver-generated id, createdAt and lastUpdatedAt in ISO 8601, and its ttl",
        tests: &["tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited"],
    },
    Requirement {
        id: "S-task-status",
        text: "a task starts working and ends completed, failed (an isError result included) or cancelled; a terminal status never changes",
        tests: &[
            "tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited",
            "tasks::task_support_is_enforced_and_unknown_tasks_refused",
            "tasks::cancelling_a_task_trips_its_handler_and_it_stays_cancelled",
        ],
    },
    Requirement {
        id: "S-task-result",
        text: "tasks/result waits until the task is terminal, then returns what the request would have returned, with the related-task _meta",
        tests: &[
            "tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited",
            "tasks::task_support_is_enforced_and_unknown_tasks_refused",
        ],
    },
    Requirement {
        id: "S-task-cancel",
        text: "tasks/cancel moves the task to cancelled before it answers; cancelling a terminal task is -32602",
        tests: &[
            "tasks::cancelling_a_task_trips_its_handler_and_it_stays_cancelled",
            "tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited",
        ],
    },
    Requirement {
        id: "S-task-errors",
        text: "an unknown or expired taskId, and an invalid tasks/list cursor, are -32602",
        tests: &[
            "tasks::task_support_is_enforced_and_unknown_tasks_refused",
            "tasks::tasks_are_bounded_and_expire_with_their_results",
        ],
    },
    Requirement {
        id: "S-task-list",
        text: "every task tasks/get can retrieve is listed for its requestor, page by page, and for no one else",
        tests: &[
            "tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited",
            "tasks::tasks_list_pages",
            "tasks::a_connection_sees_only_its_own_tasks",
        ],
    },
    Requirement {
        id: "S-task-isolation",
        text: "a task is bound to the connection that created it: another connection's tasks/get, tasks/result and tasks/cancel are refused",
        tests: &["tasks::a_connection_sees_only_its_own_tasks"],
    },
    Requirement {
        id: "S-task-related",
        text: "messages related to a task (its result, an elicitation it makes) carry io.modelcontextprotocol/related-task",
        tests: &[
            "tasks::a_task_runs_in_the_background_and_is_polled_listed_and_awaited",
            "tasks::a_task_elicits_through_tasks_result",
        ],
    },
    // Tasks: the 2026-07-28 extension io.modelcontextprotocol/tasks.
    Requirement {
        id: "S-task-ext-negotiation",
        text: "a task is returned only to a request that declares the extension; without it a task-only tool, tasks/* and a listen for taskIds are -32021 naming the extension, and an optional tool runs directly; discover advertises the extension",
        tests: &["tasks_2026::negotiation_is_per_request_and_discover_advertises_the_extension"],
    },
    Requirement {
        id: "S-task-ext-create",
        text: "a CreateTaskResult has resultType task and comes only once tasks/get resolves the task, which outlives the request (over HTTP, its POST)",
        tests: &[
            "tasks_2026::a_task_is_created_stored_first_and_ends_completed_or_failed",
            "tasks_2026::over_http_a_task_outlives_its_post_and_mcp_name_carries_the_task_id",
        ],
    },
    Requirement {
        id: "S-task-ext-outcome",
        text: "a completed task carries its result, an isError one included; failed is only for a JSON-RPC error, which it carries",
        tests: &[
            "tasks_2026::a_task_is_created_stored_first_and_ends_completed_or_failed",
            "tasks_2026::the_client_starts_and_awaits_tasks_and_takes_an_immediate_result",
        ],
    },
    Requirement {
        id: "S-task-ext-input",
        text: "a task that needs input is input_required with its input requests on tasks/get, answered by tasks/update (unknown keys ignored); input needed before the task exists is a round of the call",
        tests: &[
            "tasks_2026::input_parks_the_task_and_tasks_update_resumes_it_key_by_key",
            "tasks_2026::input_before_the_task_is_a_round_of_the_call",
            "tasks_2026::the_client_answers_a_tasks_input_requests_with_its_callbacks",
        ],
    },
    Requirement {
        id: "S-task-ext-methods",
        text: "the extension's methods are tasks/get, tasks/update and tasks/cancel, the last two acknowledged with an empty result; tasks/result and tasks/list are gone",
        tests: &[
            "tasks_2026::negotiation_is_per_request_and_discover_advertises_the_extension",
            "tasks_2026::cancel_acks_empty_and_is_idempotent",
            "tasks_2026::input_parks_the_task_and_tasks_update_resumes_it_key_by_key",
            "tasks_2026::the_client_cancels_a_task_and_cancels_it_past_the_deadline",
        ],
    },
    // Authorization (the MCP specification): the protected resource, then the client.
    Requirement {
        id: "S-auth-prm",
        text: "a protected server serves its RFC 9728 metadata, naming its authorization servers, at the path-suffixed and the root well-known URIs, and names it in the 401's WWW-Authenticate resource_metadata",
        tests: &[
            "auth_server::metadata_is_served_at_the_root_and_the_path_suffixed_well_known_paths",
            "auth_server::a_missing_token_is_challenged_with_the_metadata_url_and_scope",
        ],
    },
    Requirement {
        id: "S-auth-tokens",
        text: "the server validates access tokens, audience included: a missing, unknown, inactive, expired, foreign-issuer or foreign-audience token gets 401",
        tests: &[
            "auth_server::a_missing_token_is_challenged_with_the_metadata_url_and_scope",
            "auth_server::unknown_expired_and_foreign_audience_tokens_get_invalid_token",
            "auth_server::introspection_accepts_only_active_tokens_issued_for_this_resource",
            "auth_server::jwt::jwt_tokens_are_checked_for_signature_expiry_issuer_and_audience",
        ],
    },
    Requirement {
        id: "S-auth-session",
        text: "a session is not authentication: each request is verified, and another principal's requests on a session are refused",
        tests: &["auth_server::a_session_is_bound_to_the_principal_that_created_it"],
    },
    Requirement {
        id: "S-auth-step-up",
        text: "insufficient scope is a 403 challenge naming every scope the operation needs; the client treats challenged scopes as authoritative, asks for the union with what it had, and stops after a bounded number of attempts",
        tests: &[
            "auth_server::scopes_are_required_per_tool_and_per_method_with_a_step_up_challenge",
            "auth_flow::step_up_asks_for_the_union_and_stops_at_the_limit",
            "auth_flow::a_configured_scope_replaces_the_challenges_and_step_up_adds_to_it",
        ],
    },
    Requirement {
        id: "S-auth-prm-discovery",
        text: "the client takes the protected resource metadata from the challenge's resource_metadata when given, else the path-suffixed then the root well-known URI; a document for another resource stops discovery",
        tests: &[
            "auth_discovery::the_challenge_url_is_the_only_candidate",
            "auth_discovery::the_path_suffixed_document_comes_first",
            "auth_discovery::the_root_document_after_a_failed_fetch",
            "auth_discovery::a_resource_mismatch_stops_discovery",
        ],
    },
    Requirement {
        id: "S-auth-as-discovery",
        text: "the client finds authorization server metadata by RFC 8414 and OIDC Discovery in the spec's order, and refuses a document whose issuer is not the one it asked",
        tests: &[
            "auth_discovery::each_form_of_an_issuer_with_a_path",
            "auth_discovery::an_issuer_mismatch_stops_discovery",
        ],
    },
    Requirement {
        id: "S-auth-pkce",
        text: "the client uses PKCE with S256, and refuses to proceed when the metadata does not advertise S256",
        tests: &[
            "auth_discovery::an_authorization_server_without_s256_stops_discovery",
            "auth_flow::refuses_without_s256_and_on_resource_mismatch",
            "auth_flow::public_client_registers_and_uses_pkce_resource_and_state",
        ],
    },
    Requirement {
        id: "S-auth-resource",
        text: "the client sends the resource parameter (RFC 8707) in the authorization request and in every token request",
        tests: &[
            "auth_flow::public_client_registers_and_uses_pkce_resource_and_state",
            "auth_flow::refreshes_instead_of_authorizing_again",
            "auth_flow::client_credentials_grant",
        ],
    },
    Requirement {
        id: "S-auth-iss",
        text: "RFC 9207: the client compares iss when present, refuses its absence when advertised, and uses no code from a refused response",
        tests: &["auth_flow::iss_is_checked_before_the_code_is_used"],
    },
    Requirement {
        id: "S-auth-issuer-binding",
        text: "client credentials are kept per authorization server: when the server's authorization server changes, the client registers again",
        tests: &["auth_flow::a_new_authorization_server_means_a_new_registration"],
    },
    Requirement {
        id: "S-auth-bearer",
        text: "the client sends its access token in an Authorization: Bearer header, the session's DELETE included",
        tests: &["auth_flow::public_client_registers_and_uses_pkce_resource_and_state"],
    },
    Requirement {
        id: "S-auth-confidential",
        text: "tokens and secrets stay confidential: none reaches a log line, an error message or Debug output, and a refused token is never echoed",
        tests: &[
            "auth_flow::tokens_and_secrets_never_reach_logs_errors_or_debug",
            "auth_server::unknown_expired_and_foreign_audience_tokens_get_invalid_token",
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
    source!("engine", "routed"),
    source!("client", "client"),
    source!("server", "server"),
    source!("http", "http_server"),
    source!("http", "http_client"),
    source!("http", "http_engine"),
    source!("eras", "handshake_era"),
    source!("eras", "era_2026"),
    source!("eras", "client_2026"),
    source!("eras", "client_2026_gaps"),
    source!("eras", "seeds_2026"),
    source!("eras", "instances_2026"),
    source!("tasks", "tasks"),
    source!("tasks", "tasks_2026"),
    source!("auth", "auth_discovery"),
    source!("auth", "auth_flow"),
    source!("auth", "auth_server"),
    Source {
        module: "auth_server::jwt",
        binary: "auth",
        parent: include_str!("../auth/auth_server.rs"),
        text: include_str!("../auth/auth_server/jwt.rs"),
    },
    Source {
        module: "cli",
        binary: "commands (mcpflow-cli)",
        parent: include_str!("../../../mcpflow-cli/tests/commands/main.rs"),
        text: include_str!("../../../mcpflow-cli/tests/commands/cli.rs"),
    },
    Source {
        module: "fleet_sessions",
        binary: "commands (mcpflow-cli)",
        parent: include_str!("../../../mcpflow-cli/tests/commands/main.rs"),
        text: include_str!("../../../mcpflow-cli/tests/commands/fleet_sessions.rs"),
    },
    source!("telemetry", "spans"),
    source!("telemetry", "conventions"),
    Source {
        module: "otel_peers",
        binary: "commands (mcpflow-cli)",
        parent: include_str!("../../../mcpflow-cli/tests/commands/main.rs"),
        text: include_str!("../../../mcpflow-cli/tests/commands/otel_peers.rs"),
    },
    Source {
        module: "fleet_tasks",
        binary: "commands (mcpflow-cli)",
        parent: include_str!("../../../mcpflow-cli/tests/commands/main.rs"),
        text: include_str!("../../../mcpflow-cli/tests/commands/fleet_tasks.rs"),
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
