//! The `subscriptions/listen` stream of a 2026-07-28 connection: list changes the
//! server announces (`listChanged` in its discover capabilities) and the resource
//! updates the client subscribed to ([`ClientHandle::subscribe`](super::ClientHandle::subscribe)). The stream is opened
//! again with a new filter when the subscriptions change; each opening is confirmed by
//! `notifications/subscriptions/acknowledged`, which callers wait for so that nothing
//! announced after they return is missed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow_protocol::ServerCapabilities;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
};
use tokio::sync::watch;

use crate::error::SessionError;
use crate::session::{Peer, RequestOptions};

/// Longest a listen stream is kept open before it is opened again.
const LISTEN_SPAN: Duration = Duration::from_secs(24 * 3600);
/// Wait before opening a listen stream again after it ended or failed (doubling up to
/// [`LISTEN_BACKOFF_MAX`]).
const LISTEN_BACKOFF: Duration = Duration::from_millis(500);
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What the listen task and the client's calls share.
#[derive(Debug)]
pub(crate) struct Listen {
    /// The resource URIs subscribed to.
    resources: Mutex<BTreeSet<String>>,
    /// Bumped when `resources` changes: the stream is opened again.
    changed: watch::Sender<u64>,
    /// How many acknowledgements arrived, and the filter the last one honoured.
    acked: watch::Sender<(u64, SubscriptionFilter)>,
}

impl Default for Listen {
    fn default() -> Self {
        Listen {
            resources: Mutex::default(),
            changed: watch::Sender::new(0),
            acked: watch::Sender::new((0, SubscriptionFilter::default())),
        }
    }
}

impl Listen {
    /// Record an acknowledgement (on the reader: never blocks). Whether it re-opened a
    /// stream (the lists may have changed unannounced in between).
    pub(crate) fn acknowledged(&self, params: Option<&serde_json::value::RawValue>) -> bool {
        let filter = params
            .and_then(|p| {
                serde_json::from_str::<SubscriptionsAcknowledgedNotificationParams>(p.get()).ok()
            })
            .map(|p| p.notifications)
            .unwrap_or_default();
        let mut again = false;
        self.acked.send_modify(|(count, last)| {
            again = *count > 0;
            *count += 1;
            *last = filter;
        });
        again
    }

    fn filter(&self, capabilities: &ServerCapabilities) -> SubscriptionFilter {
        let flag = |on: bool| on.then_some(true);
        let resources = self
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        SubscriptionFilter {
            tools_list_changed: flag(
                capabilities
                    .tools
                    .as_ref()
                    .is_some_and(|t| t.list_changed == Some(true)),
            ),
            prompts_list_changed: flag(
                capabilities
                    .prompts
                    .as_ref()
                    .is_some_and(|p| p.list_changed == Some(true)),
            ),
            resources_list_changed: flag(
                capabilities
                    .resources
                    .as_ref()
                    .is_some_and(|r| r.list_changed == Some(true)),
            ),
            resource_subscriptions: (!resources.is_empty())
                .then(|| resources.iter().cloned().collect()),
            ..Default::default()
        }
    }

    /// Wait (at most `limit`) until an acknowledgement after `after` acknowledgements
    /// honours what `done` asks for. Whether one did.
    async fn wait_acked(
        &self,
        after: u64,
        limit: Duration,
        done: impl Fn(&SubscriptionFilter) -> bool,
    ) -> bool {
        let mut acked = self.acked.subscribe();
        let wait = acked.wait_for(|(count, filter)| *count > after && done(filter));
        matches!(tokio::time::timeout(limit, wait).await, Ok(Ok(_)))
    }

    fn acks(&self) -> u64 {
        self.acked.borrow().0
    }
}

/// Keep a listen stream open while the connection lives, opened again when it ends or
/// the subscriptions change. Waits (at most `limit`) for the first acknowledgement, so
/// that list changes announced after `connect` returns are not missed.
pub(crate) async fn start(
    peer: &Peer,
    listen: &Arc<Listen>,
    capabilities: &ServerCapabilities,
    limit: Duration,
) -> tokio::task::JoinHandle<()> {
    let first = !listen.filter(capabilities).is_empty();
    let task = tokio::spawn(run(peer.clone(), listen.clone(), capabilities.clone()));
    if first && !listen.wait_acked(0, limit, |_| true).await {
        tracing::debug!("the listen stream was not acknowledged in time");
    }
    task
}

async fn run(peer: Peer, listen: Arc<Listen>, capabilities: ServerCapabilities) {
    let mut changed = listen.changed.subscribe();
    let mut backoff = LISTEN_BACKOFF;
    loop {
        changed.mark_unchanged();
        let filter = listen.filter(&capabilities);
        if filter.is_empty() {
            if changed.changed().await.is_err() {
                return;
            }
            continue;
        }
        let params = SubscriptionsListenRequestParams {
            notifications: filter,
            ..Default::default()
        };
        let options = RequestOptions::new()
            .timeout(LISTEN_SPAN)
            .max_total(LISTEN_SPAN);
        let stream =
            peer.request::<_, serde_json::Value>(method::SUBSCRIPTIONS_LISTEN, &params, options);
        tokio::select! {
            ended = stream => match ended {
                Err(e) if e.is_closed() => return,
                Ok(_) => {
                    tracing::debug!("the server ended the listen stream; opening it again");
                    backoff = LISTEN_BACKOFF;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "the listen stream failed; opening it again");
                }
            },
            // Dropping the request ends its stream (HTTP) or cancels it (stdio).
            _ = changed.changed() => continue,
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = changed.changed() => {}
        }
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}

impl Listen {
    /// 2026-07-28 `resources/subscribe`: add `uri` to the listen stream's
    /// `resourceSubscriptions` and wait (at most `limit`) until the server acknowledged it.
    pub(crate) async fn subscribe(
        &self,
        capabilities: &ServerCapabilities,
        limit: Duration,
        uri: &str,
    ) -> Result<(), SessionError> {
        let offered = capabilities
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true));
        if !offered {
            return Err(SessionError::Codec {
                method: method::RESOURCES_SUBSCRIBE.into(),
                detail: "the server does not offer resource subscriptions".to_owned(),
            });
        }
        let wants = |f: &SubscriptionFilter| {
            f.resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri))
        };
        self.change_subscriptions(
            capabilities,
            limit,
            method::RESOURCES_SUBSCRIBE,
            wants,
            |set| set.insert(uri.to_owned()),
        )
        .await
    }

    /// 2026-07-28 `resources/unsubscribe`: drop `uri` from the listen stream.
    pub(crate) async fn unsubscribe(
        &self,
        capabilities: &ServerCapabilities,
        limit: Duration,
        uri: &str,
    ) -> Result<(), SessionError> {
        let gone = |f: &SubscriptionFilter| {
            f.resource_subscriptions
                .as_ref()
                .is_none_or(|uris| uris.iter().all(|u| u != uri))
        };
        self.change_subscriptions(
            capabilities,
            limit,
            method::RESOURCES_UNSUBSCRIBE,
            gone,
            |set| set.remove(uri),
        )
        .await
    }

    async fn change_subscriptions(
        &self,
        capabilities: &ServerCapabilities,
        limit: Duration,
        method: &str,
        done: impl Fn(&SubscriptionFilter) -> bool,
        change: impl FnOnce(&mut BTreeSet<String>) -> bool,
    ) -> Result<(), SessionError> {
        let after = self.acks();
        let changed = change(
            &mut self
                .resources
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if !changed {
            return Ok(());
        }
        self.changed.send_modify(|n| *n += 1);
        if self.filter(capabilities).is_empty() {
            // Nothing left to listen for: the stream is dropped, not opened again.
            return Ok(());
        }
        if self.wait_acked(after, limit, done).await {
            Ok(())
        } else {
            Err(SessionError::Codec {
                method: method.into(),
                detail: format!(
                    "the server did not acknowledge the new subscriptions/listen filter within {limit:?}"
                ),
            })
        }
    }
}
