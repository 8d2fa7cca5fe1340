//! The answers to one JSON-RPC batch (2025-03-26), sent together as one array once
//! every request in it has answered or ended unanswered (cancelled), as JSON-RPC asks.
//! Transports that route each response by its id (streamable HTTP, which builds the
//! array itself) take the answers one by one instead
//! ([`FrameReader::answers_batches_whole`](crate::transport::FrameReader::answers_batches_whole)).

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use super::writer::Outbound;
use crate::transport::{FrameKind, FrameMeta};

/// The answers of one batch, collected until the last request of it ends.
#[derive(Default)]
pub(crate) struct BatchAnswers(Mutex<Collected>);

#[derive(Default)]
struct Collected {
    /// Requests admitted whose answer has not come yet.
    open: usize,
    /// Every item of the batch has been routed.
    sealed: bool,
    answers: Vec<Bytes>,
}

impl BatchAnswers {
    pub(crate) fn new() -> Arc<BatchAnswers> {
        Arc::default()
    }

    fn collected(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request of the batch was admitted: its answer comes later.
    pub(crate) fn expect(&self) {
        self.collected().open += 1;
    }

    /// Every item was routed; `replies` are the answers made while routing (errors,
    /// pings). The array, when no request is still open.
    pub(crate) fn seal(&self, replies: Vec<Outbound>) -> Option<Outbound> {
        let mut collected = self.collected();
        collected.sealed = true;
        collected
            .answers
            .extend(replies.into_iter().map(|r| r.frame.into_bytes()));
        collected.complete()
    }

    /// A request of the batch ended with `answer` (`None`: unanswered). The array,
    /// when it was the last.
    pub(crate) fn finish(&self, answer: Option<Outbound>) -> Option<Outbound> {
        let mut collected = self.collected();
        collected.open = collected.open.saturating_sub(1);
        if let Some(answer) = answer {
            collected.answers.push(answer.frame.into_bytes());
        }
        collected.complete()
    }
}

impl Collected {
    /// The array of every answer, once nothing is open; nothing for a batch of
    /// notifications (or of cancelled requests).
    fn complete(&mut self) -> Option<Outbound> {
        if !self.sealed || self.open > 0 || self.answers.is_empty() {
            return None;
        }
        let answers = std::mem::take(&mut self.answers);
        let mut array = Vec::with_capacity(answers.iter().map(|a| a.len() + 1).sum::<usize>() + 1);
        array.push(b'[');
        for (i, answer) in answers.iter().enumerate() {
            if i > 0 {
                array.push(b',');
            }
            array.extend_from_slice(answer);
        }
        array.push(b']');
        Some(Outbound::new(
            array,
            FrameMeta::new(FrameKind::Response(None)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Outbound {
        Outbound::new(
            text.as_bytes().to_vec(),
            FrameMeta::new(FrameKind::Response(None)),
        )
    }

    fn text(out: Option<Outbound>) -> Option<String> {
        out.map(|o| String::from_utf8(o.frame.into_bytes().to_vec()).expect("UTF-8"))
    }

    #[test]
    fn the_array_goes_out_when_the_last_request_ends_after_sealing() {
        let batch = BatchAnswers::new();
        batch.expect();
        batch.expect();
        assert_eq!(
            text(batch.finish(Some(answer("1")))),
            None,
            "one request still open"
        );
        assert_eq!(
            text(batch.seal(vec![answer("e")])),
            None,
            "one request still open"
        );
        assert_eq!(text(batch.finish(None)).as_deref(), Some("[1,e]"));
    }

    #[test]
    fn a_batch_answered_while_routing_goes_out_at_sealing_and_notifications_get_nothing() {
        let batch = BatchAnswers::new();
        assert_eq!(text(batch.seal(vec![answer("p")])).as_deref(), Some("[p]"));
        let notifications = BatchAnswers::new();
        assert_eq!(text(notifications.seal(Vec::new())), None);
        let cancelled = BatchAnswers::new();
        cancelled.expect();
        assert_eq!(text(cancelled.seal(Vec::new())), None);
        assert_eq!(text(cancelled.finish(None)), None, "no answer at all");
    }
}
