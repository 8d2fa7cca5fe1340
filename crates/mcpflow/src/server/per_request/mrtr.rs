//! Multi-round-trip requests (2026-07-28) behind the handler API of the handshake era.
//!
//! A handler that calls [`ServerContext::elicit`](crate::server::ServerContext::elicit),
//! `create_message` or `list_roots` on a 2026-07-28 request is run from the start on
//! every round. Each such call gets a key, by call order (or the one named with
//! [`ServerContext::input_key`](crate::server::ServerContext::input_key)); a call whose
//! key has an answer (sent in this round's `inputResponses`, or in an earlier round and
//! carried in the signed `requestState`) returns it at once; one without registers its
//! request and never resolves. When a poll of the handler ends with requests
//! registered, the handler is dropped and the client gets `input_required` with all of
//! them (so two elicitations joined ask both in one round). Side effects a handler
//! causes before an input call therefore happen again on every round.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Poll;

use mcpflow_protocol::mrtr::{InputRequest, InputRequests};
use mcpflow_protocol::tasks2026::CreateTaskResult;
use mcpflow_protocol::{ErrorObject, InputRequiredResult};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::state::{Audience, Binding, StateKey};
use crate::server::Server;
use crate::session::{BoxFuture, JsonText, Reply, RequestHead};

/// One round of a request that may ask for input.
#[derive(Debug)]
pub(crate) struct Round {
    /// Every answer known this round: the signed earlier ones and this round's.
    answers: BTreeMap<String, Value>,
    /// What the state is bound to: the method, its target and its arguments.
    target: (String, String, Option<JsonText>),
    /// And whom it is for: this server (its name; its key seals the state), and the
    /// principal the request acts for.
    principal: Option<String>,
    server: Server,
    binding: OnceLock<Binding>,
    next: AtomicUsize,
    /// The answers the handler used, carried into the next round's state.
    used: Mutex<BTreeMap<String, Value>>,
    /// The requests registered since the handler was last polled.
    asked: Mutex<InputRequests>,
    /// The handler made the state it issues single-use.
    single_use: AtomicBool,
    /// The single-use token of the state this round came with, to consume before the
    /// handler runs.
    consumes: Option<String>,
}

impl Round {
    /// The round a request describes: -32602 for state that fails verification or
    /// belongs to another request.
    pub(crate) fn new(
        server: &Server,
        name: &str,
        head: &RequestHead,
        principal: Option<String>,
    ) -> Result<Round, ErrorObject> {
        let target = match head.name.optional("name")? {
            Some(name) => name.clone(),
            None => head.uri.optional("uri")?.cloned().unwrap_or_default(),
        };
        let arguments = head.arguments.optional("arguments")?.cloned();
        let mut round = Round {
            answers: BTreeMap::new(),
            target: (name.to_owned(), target, arguments),
            principal,
            server: server.clone(),
            binding: OnceLock::new(),
            next: AtomicUsize::new(0),
            used: Mutex::default(),
            asked: Mutex::default(),
            single_use: AtomicBool::new(false),
            consumes: None,
        };
        if let Some(state) = head.request_state.optional("requestState")? {
            let opened = round.key().open(state, round.binding())?;
            round.answers = opened.answers;
            round.consumes = opened.once;
        }
        if let Some(responses) = head.input_responses.optional("inputResponses")? {
            let responses: BTreeMap<String, Value> =
                responses.decode().map_err(ErrorObject::invalid_params)?;
            round.answers.extend(responses);
        }
        Ok(round)
    }

    /// The binding of this round's state, made when first needed (it hashes the
    /// arguments).
    fn binding(&self) -> &Binding {
        self.binding.get_or_init(|| {
            let (method, target, arguments) = &self.target;
            let arguments = arguments.as_ref().and_then(|a| a.decode::<Value>().ok());
            let audience = Audience {
                server: &self.server.inner.info.name,
                principal: self.principal.clone(),
            };
            Binding::new(method, target.clone(), arguments.as_ref(), audience)
        })
    }

    /// The server's `requestState` key ring.
    fn key(&self) -> &StateKey {
        &self.server.inner.state_key
    }

    /// The key of the next input call: `named`, or one by call order.
    pub(crate) fn next_key(&self, named: Option<&str>) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        named.map_or_else(|| format!("input-{n}"), str::to_owned)
    }

    /// The answer to `key` if there is one that reads as `T` (one that does not is
    /// asked for again).
    pub(crate) fn answer<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let value = self.answers.get(key)?;
        let answer = T::deserialize(value).ok()?;
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), value.clone());
        Some(answer)
    }

    /// Register a request for the client.
    pub(crate) fn ask(&self, key: String, request: InputRequest) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, request);
    }

    pub(crate) fn take_asked(&self) -> InputRequests {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn input_required(&self, requests: InputRequests) -> InputRequiredResult {
        let used = self
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let once = self
            .single_use
            .load(Ordering::Relaxed)
            .then(super::single_use::token)
            .flatten();
        let state = self.key().seal(self.binding(), &used, once);
        InputRequiredResult::new(requests, Some(state))
    }

    /// Make the state this round issues single-use.
    pub(crate) fn make_single_use(&self) {
        self.single_use.store(true, Ordering::Relaxed);
    }

    /// Consume the single-use state this round came with, if it did: -32602 when it
    /// was used before (on any instance sharing the server's store of used states).
    pub(crate) async fn consume(&self) -> Result<(), ErrorObject> {
        let Some(token) = &self.consumes else {
            return Ok(());
        };
        self.server.consume_state(token).await
    }
}

/// How a round ended.
pub(crate) enum Outcome {
    /// The method finished.
    Done(Result<Reply, ErrorObject>),
    /// The handler needs input first.
    InputRequired(InputRequiredResult),
    /// The call became a task and goes on in the background.
    Task(CreateTaskResult),
}

/// Poll `answer` until it finishes or a poll ends with input requests registered.
pub(crate) async fn run(
    round: &Arc<Round>,
    mut answer: BoxFuture<'static, Result<Reply, ErrorObject>>,
) -> Outcome {
    let outcome = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
        Poll::Ready(done) => Poll::Ready(Outcome::Done(done)),
        Poll::Pending => {
            let asked = round.take_asked();
            if asked.is_empty() {
                Poll::Pending
            } else {
                Poll::Ready(Outcome::InputRequired(round.input_required(asked)))
            }
        }
    })
    .await;
    // The handler is dropped here, before the answer goes out.
    drop(answer);
    outcome
}
