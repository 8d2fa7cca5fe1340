//! Requests from the peer: admission under the concurrency limit, the bounded queue,
//! cancellation, and the task that runs each request's handler.
//!
//! Admission never waits. A request past `max_concurrent_requests` waits for a slot (at
//! most `request_queue_capacity` of them); past that the peer gets a busy error at once.
//! Each admitted request is a task (started together with the others of its burst: see
//! [`NewRequests`]), counted until it ends, with a [`RequestCancel`] of its own (kept in
//! the table of running requests) that `notifications/cancelled`, close or drop trips.
//! Cancelling shares nothing between requests: no parent token, no session-wide waiter
//! list; the table's lock is taken when a request starts and when it ends.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use foldhash::fast::RandomState;
use mcpflow_protocol::{ErrorCode, ErrorObject, RequestId};
use tokio::sync::{Notify, Semaphore, mpsc};

use super::batch::BatchAnswers;
use super::cancel::RequestCancel;
use super::encode::error_frame;
use super::read::ReadRequest;
use super::writer::{Direct, DirectWrite, Outbound, Sequential};
use super::{BoxFuture, Peer, RequestContext, Service, catch_unwind};
use crate::transport::FrameMeta;

/// The running requests by id. Ids come from the peer, so the hasher is seeded per map.
type Running = HashMap<RequestId, Arc<RequestCancel>, RandomState>;

pub(crate) struct Inbound {
    running: Mutex<Running>,
    slots: Semaphore,
    /// Requests admitted whose task has not ended (running, queued for a slot, or
    /// queueing their answer).
    admitted: AtomicUsize,
    /// Notified when `admitted` drops to zero.
    drained: Notify,
    limit: usize,
    max_concurrent: usize,
    queue_capacity: usize,
    /// Set when close begins: a request admitted from then on starts cancelled.
    closing: AtomicBool,
    /// Set when handlers outlive the last grace: a request admitted from then on starts
    /// aborted (its task drops it at once).
    aborting: AtomicBool,
    cancel_grace: std::time::Duration,
    /// The writer queue, for the answers.
    answers: mpsc::Sender<Outbound>,
    /// The way past the writer queue, for a sequential peer's answers.
    direct: Arc<dyn DirectWrite>,
    /// Whether the peer looks sequential: each request the only one running as it
    /// finishes.
    sequential: Sequential,
}

/// Why a request was not admitted; the reader answers with this error.
pub(crate) enum Refusal {
    Duplicate(RequestId),
    Busy(RequestId),
}

impl Inbound {
    pub(crate) fn new(
        max_concurrent: usize,
        queue_capacity: usize,
        cancel_grace: std::time::Duration,
        answers: mpsc::Sender<Outbound>,
        direct: Arc<dyn DirectWrite>,
    ) -> Arc<Self> {
        Arc::new(Inbound {
            running: Mutex::new(HashMap::default()),
            slots: Semaphore::new(max_concurrent),
            admitted: AtomicUsize::new(0),
            drained: Notify::new(),
            limit: max_concurrent + queue_capacity,
            max_concurrent,
            queue_capacity,
            closing: AtomicBool::new(false),
            aborting: AtomicBool::new(false),
            cancel_grace,
            answers,
            direct,
            sequential: Sequential::default(),
        })
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Requests admitted and not yet answered (running or queued).
    pub(crate) fn in_flight(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// Admit a request or say why not. Never waits.
    pub(crate) fn admit(
        self: &Arc<Self>,
        request: ReadRequest,
        service: &Arc<dyn Service>,
        peer: &Peer,
        new: &mut NewRequests,
        batch: Option<&Arc<BatchAnswers>>,
    ) -> Result<(), Refusal> {
        let (token, admitted) = {
            let mut running = self.running();
            if running.contains_key(&request.id) {
                return Err(Refusal::Duplicate(request.id));
            }
            if self.admitted.load(Ordering::Acquire) >= self.limit {
                return Err(Refusal::Busy(request.id));
            }
            let token = Arc::new(RequestCancel::default());
            running.insert(request.id.clone(), token.clone());
            (token, Admitted::count(self))
        };
        // Close sets a flag before it cancels what the table holds, so a request is
        // either in the table then or sees the flag here.
        if self.aborting.load(Ordering::SeqCst) {
            token.abort();
        } else if self.closing.load(Ordering::SeqCst) {
            token.cancel();
        }
        let peer = peer.with_related(request.id.clone());
        if let Some(batch) = batch {
            batch.expect();
        }
        new.0.push(NewRequest {
            admitted,
            request,
            token,
            service: service.clone(),
            peer,
            batch: batch.cloned(),
        });
        Ok(())
    }

    /// Queue a handler's answer. Done at once when the writer queue has room (or the
    /// connection has ended); otherwise the returned future waits for room. Not an
    /// `async fn`, so the request task holds no state for a wait it rarely makes.
    ///
    /// The answer to a sequential peer (its request was the only one running when it
    /// finished, and so was the one before) is written at once when the writer is
    /// idle, as a sequential caller's request is: one hand-off to the writer task fewer.
    fn answer(&self, frame: Outbound, alone: bool) -> Option<BoxFuture<'static, ()>> {
        let frame = if self.sequential.next(alone) {
            match self.direct.write_now(frame) {
                Direct::Written => return None,
                Direct::Declined(frame) => frame,
            }
        } else {
            frame
        };
        match self.answers.try_send(frame) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => None,
            Err(mpsc::error::TrySendError::Full(frame)) => {
                let answers = self.answers.clone();
                Some(Box::pin(async move {
                    let _ = answers.send(frame).await;
                }))
            }
        }
    }

    /// Send a request's answer (`None`: it ended unanswered), or, for a request of a
    /// batch, add it to the batch's array and send that once it is complete.
    async fn conclude(
        &self,
        answer: Option<Outbound>,
        alone: bool,
        batch: Option<Arc<BatchAnswers>>,
    ) {
        let (frame, alone) = match batch {
            None => (answer, alone),
            Some(batch) => (batch.finish(answer), false),
        };
        if let Some(wait) = frame.and_then(|frame| self.answer(frame, alone)) {
            wait.await;
        }
    }

    /// `notifications/cancelled` from the peer: trip that request's token.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        let running = self.running();
        let found = running.get(id).or_else(|| {
            let n = id.correlation_number()?;
            running
                .iter()
                .find(|(k, _)| k.correlation_number() == Some(n))
                .map(|(_, t)| t)
        });
        match found {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// The error for a refused request.
    pub(crate) fn refusal_error(&self, refusal: &Refusal) -> (RequestId, ErrorObject) {
        match refusal {
            Refusal::Duplicate(id) => (
                id.clone(),
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "request id {id} is already in flight; ids must be unique among pending requests"
                    ),
                ),
            ),
            Refusal::Busy(id) => (
                id.clone(),
                ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "server busy: {} requests running and {} queued; try again later",
                        self.max_concurrent, self.queue_capacity
                    ),
                )
                .with_data(serde_json::json!({
                    "reason": "busy",
                    "maxConcurrentRequests": self.max_concurrent,
                    "requestQueueCapacity": self.queue_capacity,
                })),
            ),
        }
    }

    /// Stop the handlers. Call only after the reader has stopped (no new admissions).
    /// With `cancel_first` they are cancelled at once (a local close); otherwise they get
    /// `grace` to finish first (the peer ended its stream but may still read answers).
    /// Whatever still runs after the last grace is aborted.
    pub(crate) async fn close(&self, grace: std::time::Duration, cancel_first: bool) {
        if cancel_first {
            self.cancel_all();
        }
        if self.join_all(grace).await {
            return;
        }
        if !cancel_first {
            self.cancel_all();
            if self.join_all(grace).await {
                return;
            }
        }
        tracing::warn!(
            left = self.in_flight(),
            "request handlers ignored cancellation; aborting them"
        );
        self.abort_running();
        // Aborted tasks end when next polled. One that already answered may still wait
        // for room in the writer queue: it ends when the writer stops, after this.
        if !self.join_all(grace).await {
            tracing::warn!(
                left = self.in_flight(),
                "request tasks still wait to queue their answers; they end with the writer"
            );
        }
    }

    /// Abort everything now (the session was dropped): each task drops its handler the
    /// next time it is polled.
    pub(crate) fn abort_all(&self) {
        self.cancel_all();
        self.abort_running();
    }

    /// Have every admitted request's task drop its handler, and every one admitted
    /// from now on.
    fn abort_running(&self) {
        self.aborting.store(true, Ordering::SeqCst);
        for token in self.running().values() {
            token.abort();
        }
    }

    /// Cancel every admitted request, and every one admitted from now on.
    fn cancel_all(&self) {
        self.closing.store(true, Ordering::SeqCst);
        for token in self.running().values() {
            token.cancel();
        }
    }

    /// Whether every task ended within `grace`.
    async fn join_all(&self, grace: std::time::Duration) -> bool {
        tokio::time::timeout(grace, self.drained()).await.is_ok()
    }

    /// Resolves once no admitted request's task is left.
    async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            // Registered before the count is read, so a drop to zero in between wakes it.
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// A request's task.
type RequestTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// An admitted request, not started yet: what its task is made of. Its task is made
/// by whichever task starts it, so a request answered in its first poll is allocated
/// and freed on one thread.
pub(crate) struct NewRequest {
    admitted: Admitted,
    request: ReadRequest,
    token: Arc<RequestCancel>,
    service: Arc<dyn Service>,
    peer: Peer,
    /// The batch it came in, when its answer goes out in the batch's array.
    batch: Option<Arc<BatchAnswers>>,
}

impl NewRequest {
    fn into_task(self) -> RequestTask {
        // Boxed, so it can become a task of its own after its first poll.
        Box::pin(serve(self))
    }
}

/// Requests started by one task, at most.
const START_GROUP: usize = 16;

/// A first poll this long hands the rest of its group to the scheduler unpolled.
const SLOW_START: Duration = Duration::from_millis(1);

/// Requests admitted while reading a burst of input, not started yet. The reader starts
/// them in groups of up to [`START_GROUP`]: one task polls each of a group once, and
/// any that is not done by then becomes a task of its own. A burst of quick requests
/// (the common case: a handler that answers without waiting) thus costs one spawn per
/// group instead of one per request, and the groups still spread over the runtime's
/// workers. A handler that blocks its thread in its first poll delays the rest of its
/// group until it returns; one that takes long hands them on at once.
#[derive(Default)]
pub(crate) struct NewRequests(Vec<NewRequest>);

impl NewRequests {
    /// Whether a group is full.
    pub(crate) fn is_full(&self) -> bool {
        self.0.len() >= START_GROUP
    }

    /// Start every request held.
    pub(crate) fn start(&mut self) {
        match self.0.len() {
            0 => {}
            1 => {
                if let Some(request) = self.0.pop() {
                    tokio::spawn(request.into_task());
                }
            }
            _ => {
                // The group gets a vector of its size; the reader's is kept for the next.
                tokio::spawn(start_group(self.0.drain(..).collect()));
            }
        }
    }

    /// Start every request held from the calling task: each is polled here once, and
    /// continues as a task of its own if it waits.
    pub(crate) async fn start_here(&mut self) {
        if !self.0.is_empty() {
            start_group(std::mem::take(&mut self.0)).await;
        }
    }
}

/// Poll each request of a group once; whatever is still running continues as its own
/// task (which polls it again, so its wake-ups go to that task).
async fn start_group(group: Vec<NewRequest>) {
    let mut group = group.into_iter();
    std::future::poll_fn(move |cx| {
        let began = Instant::now();
        while let Some(request) = group.next() {
            let mut task = request.into_task();
            if task.as_mut().poll(cx).is_pending() {
                tokio::spawn(task);
            }
            if began.elapsed() >= SLOW_START {
                group
                    .by_ref()
                    .for_each(|request| drop(tokio::spawn(request.into_task())));
            }
        }
        Poll::Ready(())
    })
    .await;
}

/// One admitted request, counted from its admission until its task ends, or is dropped
/// without having run.
struct Admitted(Arc<Inbound>);

impl Admitted {
    fn count(inbound: &Arc<Inbound>) -> Admitted {
        inbound.admitted.fetch_add(1, Ordering::AcqRel);
        Admitted(inbound.clone())
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if self.0.admitted.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

/// One request's task. Every wait in it ends when the request is cancelled (abort is a
/// cancellation too), and the grace after a cancellation ends at an abort. The only
/// exception is queueing the answer, after the request left the table: the writer's
/// stop ends that.
async fn serve(new: NewRequest) {
    let NewRequest {
        admitted,
        request,
        token,
        service,
        peer,
        batch,
    } = new;
    // The slow paths (waiting for a slot, the cancellation grace, a full writer queue)
    // are boxed, so this future stays small: it is allocated per request.
    let inbound = &*admitted.0;
    let id = request.id.clone();
    // Cancelled (by the peer or a close) before it started: the handler never runs.
    if token.is_cancelled() {
        inbound.running().remove(&id);
        return inbound.conclude(None, false, batch).await;
    }
    let permit = match inbound.slots.try_acquire() {
        Ok(permit) => permit,
        Err(_) => {
            let queued = Box::pin(async {
                tokio::select! {
                    biased;
                    () = token.cancelled() => None,
                    permit = inbound.slots.acquire() => permit.ok(),
                }
            });
            match queued.await {
                Some(permit) => permit,
                None => {
                    inbound.running().remove(&id);
                    return inbound.conclude(None, false, batch).await;
                }
            }
        }
    };
    let ReadRequest {
        method: name,
        params,
        head,
        ..
    } = request;
    let method = super::method_name(&name);
    let mut cx = RequestContext::new(id.clone(), params, head.into_inner(), token.clone(), peer);
    if crate::telemetry::enabled() {
        cx.open_operation(method.clone());
    }
    let operation = cx.operation().clone();
    let span = operation.span();
    // The operation travels in the boxed handler: this future is allocated per request.
    let handler = operation.record_outcome(service.handle_request(&name, cx));
    let handler = catch_unwind(tracing::Instrument::instrument(handler, span));
    tokio::pin!(handler);
    let handled = tokio::select! {
        biased;
        outcome = &mut handler => Some(outcome),
        () = token.cancelled() => None,
    };
    if handled.is_none() {
        // Cancelled: the handler sees its token tripped and gets the grace to wind
        // down (release resources, log); then it is dropped. No answer is sent.
        let grace = tokio::time::timeout(inbound.cancel_grace, handler);
        Box::pin(async {
            tokio::select! {
                biased;
                _ = grace => {}
                () = token.aborted() => {}
            }
        })
        .await;
    }
    // Free the id before answering: the peer may reuse it as soon as it reads the answer.
    let alone = {
        let mut running = inbound.running();
        running.remove(&id);
        running.is_empty()
    };
    drop(permit);
    // Cancelled by the peer or by close, even if the handler then returned: a
    // cancelled request is not answered.
    let Some(handled) = handled.filter(|_| !token.is_cancelled()) else {
        return inbound.conclude(None, false, batch).await;
    };
    let meta = FrameMeta::response(id.clone());
    let frame = match handled {
        Ok(Ok(reply)) => reply.into_frame(id, meta),
        Ok(Err(error)) => error_frame(Some(id), error, meta),
        Err(()) => {
            tracing::error!(%method, %id, "request handler panicked");
            let error = ErrorObject::internal(format!("the handler for `{method}` panicked"));
            error_frame(Some(id), error, meta)
        }
    };
    inbound.conclude(Some(frame), alone, batch).await;
}
