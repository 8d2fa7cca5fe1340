//! W3C trace context (`traceparent`, `tracestate`) between a span and `params._meta`.

use std::str::FromStr;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Parent `span` with the remote context `traceparent` (and `tracestate`) names; a
/// malformed `traceparent` leaves the ambient parent, a malformed `tracestate` is
/// dropped.
pub(super) fn set_parent(span: &Span, traceparent: &str, tracestate: Option<&str>) {
    let Some(remote) = parse(traceparent, tracestate) else {
        tracing::debug!(traceparent, "ignored malformed trace context");
        return;
    };
    let parent = opentelemetry::Context::new().with_remote_span_context(remote);
    // Refused only when the span already started: it then keeps its ambient parent.
    let _ = span.set_parent(parent);
}

/// Link `span` to the span `traceparent` names; a malformed one is ignored.
pub(super) fn add_link(span: &Span, traceparent: &str) {
    if let Some(linked) = parse(traceparent, None) {
        span.add_link(linked);
    }
}

/// `span`'s OpenTelemetry context, when it belongs to a trace.
fn valid(span: &Span) -> Option<SpanContext> {
    let context = span.context().span().span_context().clone();
    context.is_valid().then_some(context)
}

/// `span`'s `traceparent`, when its context is valid.
pub(super) fn traceparent(span: &Span) -> Option<String> {
    valid(span).map(|context| format(&context))
}

/// `span`'s context as `_meta` entries, when it is valid.
pub(super) fn entries(span: &Span) -> Option<serde_json::Map<String, serde_json::Value>> {
    let span_context = valid(span)?;
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".to_owned(), format(&span_context).into());
    let state = span_context.trace_state().header();
    if !state.is_empty() {
        meta.insert("tracestate".to_owned(), state.into());
    }
    Some(meta)
}

/// `00-{trace id}-{span id}-{flags}`.
fn format(context: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

/// The remote context of a `traceparent` header (version 00, or a later version read
/// as 00 defines it), with its `tracestate`.
fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let version = parts.next()?;
    let trace_id = parts.next()?;
    let span_id = parts.next()?;
    let flags = parts.next()?;
    let hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if !hex(version, 2) || version == "ff" || !hex(trace_id, 32) || !hex(span_id, 16) {
        return None;
    }
    if !hex(flags, 2) || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let state = tracestate
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    let context = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        state,
    );
    context.is_valid().then_some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips_and_bad_ones_are_refused() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = parse(text, Some("congo=t61rcWkgMzE")).expect("a valid traceparent");
        assert_eq!(format(&context), text);
        assert!(context.is_sampled());
        assert_eq!(context.trace_state().header(), "congo=t61rcWkgMzE");
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        ] {
            assert!(parse(bad, None).is_none(), "{bad}");
        }
        // A later version may carry more; what 00 defines is read.
        assert!(
            parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-x",
                None
            )
            .is_some()
        );
        // A malformed tracestate is dropped, the parent kept.
        let context = parse(text, Some("congo t61rcWkgMzE")).expect("the parent stays");
        assert!(context.trace_state().header().is_empty());
    }
}
