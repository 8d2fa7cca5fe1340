//! Every method a server answers, declared once in [`METHODS`]: the function that
//! answers it, the eras that have it, what the server must offer for it, whether a
//! per-request client may be asked for input during it and whether its result may be
//! cached. One function per method, grouped by family as the spec groups them; each
//! takes its params from the request's head or decodes them itself, does its work and
//! hands its typed result to [`ServerContext::reply`].

pub(super) mod completion;
pub(super) mod lifecycle;
pub(super) mod logging;
pub(super) mod prompts;
pub(super) mod resources;
pub(super) mod tools;

use mcpflow_protocol::ErrorObject;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::tasks2026::TASKS_UPDATE;
use serde::Deserialize;

use super::ServerContext;
use super::per_request::{discover, listen};
use super::tasks::{methods as tasks, per_request as tasks_per_request};
use crate::session::{BoxFuture, Reply};

/// Which era has a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eras {
    /// Only connections that did the `initialize` handshake.
    Handshake,
    /// Only 2026-07-28 requests, each carrying its own envelope.
    PerRequest,
    /// Both.
    Both,
}

/// What the server must offer for a method to exist (see [`Server::offers`]).
///
/// [`Server::offers`]: super::Server::offers
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    Always,
    Tools,
    Resources,
    Prompts,
    Completions,
    Logging,
    Tasks,
}

/// Answers one request.
pub(crate) type Answer = fn(ServerContext) -> BoxFuture<'static, Result<Reply, ErrorObject>>;

/// One method a server answers.
#[derive(Debug)]
pub(crate) struct Method {
    pub(crate) name: &'static str,
    pub(crate) eras: Eras,
    pub(crate) offer: Offer,
    /// A 2026-07-28 client may be asked for input during it (`input_required`).
    pub(crate) asks: bool,
    /// Its 2026-07-28 result carries cache hints (`ttlMs`, `cacheScope`).
    pub(crate) cacheable: bool,
    pub(crate) answer: Answer,
}

impl Method {
    const fn new(name: &'static str, eras: Eras, offer: Offer, answer: Answer) -> Method {
        Method {
            name,
            eras,
            offer,
            asks: false,
            cacheable: false,
            answer,
        }
    }

    const fn asks(mut self) -> Method {
        self.asks = true;
        self
    }

    const fn cacheable(mut self) -> Method {
        self.cacheable = true;
        self
    }

    fn serves(&self, per_request: bool) -> bool {
        match self.eras {
            Eras::Both => true,
            Eras::Handshake => !per_request,
            Eras::PerRequest => per_request,
        }
    }
}

use Eras::{Both, Handshake, PerRequest};

/// Every method, once.
pub(crate) static METHODS: &[Method] = &[
    Method::new(method::INITIALIZE, Handshake, Offer::Always, |cx| {
        Box::pin(lifecycle::initialize(cx))
    }),
    Method::new(method::PING, Handshake, Offer::Always, |cx| {
        Box::pin(lifecycle::ping(cx))
    }),
    Method::new(method::SERVER_DISCOVER, PerRequest, Offer::Always, |cx| {
        Box::pin(discover(cx))
    })
    .cacheable(),
    Method::new(
        method::SUBSCRIPTIONS_LISTEN,
        PerRequest,
        Offer::Always,
        |cx| Box::pin(listen::listen(cx)),
    ),
    Method::new(method::TOOLS_LIST, Both, Offer::Tools, |cx| {
        Box::pin(tools::list(cx))
    })
    .cacheable(),
    Method::new(method::TOOLS_CALL, Both, Offer::Tools, |cx| {
        Box::pin(tools::call(cx))
    })
    .asks(),
    Method::new(method::RESOURCES_LIST, Both, Offer::Resources, |cx| {
        Box::pin(resources::list(cx))
    })
    .cacheable(),
    Method::new(
        method::RESOURCES_TEMPLATES_LIST,
        Both,
        Offer::Resources,
        |cx| Box::pin(resources::templates_list(cx)),
    )
    .cacheable(),
    Method::new(method::RESOURCES_READ, Both, Offer::Resources, |cx| {
        Box::pin(resources::read(cx))
    })
    .asks()
    .cacheable(),
    Method::new(
        method::RESOURCES_SUBSCRIBE,
        Handshake,
        Offer::Resources,
        |cx| Box::pin(resources::subscribe(cx)),
    ),
    Method::new(
        method::RESOURCES_UNSUBSCRIBE,
        Handshake,
        Offer::Resources,
        |cx| Box::pin(resources::unsubscribe(cx)),
    ),
    Method::new(method::PROMPTS_LIST, Both, Offer::Prompts, |cx| {
        Box::pin(prompts::list(cx))
    })
    .cacheable(),
    Method::new(method::PROMPTS_GET, Both, Offer::Prompts, |cx| {
        Box::pin(prompts::get(cx))
    })
    .asks(),
    Method::new(
        method::COMPLETION_COMPLETE,
        Both,
        Offer::Completions,
        |cx| Box::pin(completion::complete(cx)),
    ),
    Method::new(method::LOGGING_SET_LEVEL, Handshake, Offer::Logging, |cx| {
        Box::pin(logging::set_level(cx))
    }),
    Method::new(method::TASKS_GET, Handshake, Offer::Tasks, |cx| {
        Box::pin(tasks::get(cx))
    }),
    Method::new(method::TASKS_RESULT, Handshake, Offer::Tasks, |cx| {
        Box::pin(tasks::result(cx))
    }),
    Method::new(method::TASKS_LIST, Handshake, Offer::Tasks, |cx| {
        Box::pin(tasks::list(cx))
    }),
    Method::new(method::TASKS_CANCEL, Handshake, Offer::Tasks, |cx| {
        Box::pin(tasks::cancel(cx))
    }),
    Method::new(method::TASKS_GET, PerRequest, Offer::Tasks, |cx| {
        Box::pin(tasks_per_request::get(cx))
    }),
    Method::new(method::TASKS_CANCEL, PerRequest, Offer::Tasks, |cx| {
        Box::pin(tasks_per_request::cancel(cx))
    }),
    Method::new(TASKS_UPDATE, PerRequest, Offer::Always, |cx| {
        Box::pin(tasks_per_request::update(cx))
    }),
];

/// The method `name` as the era (`per_request` or not) has it.
pub(crate) fn find(name: &str, per_request: bool) -> Option<&'static Method> {
    METHODS
        .iter()
        .find(|m| m.name == name && m.serves(per_request))
}

/// Whether `name` exists only in the per-request era (its request is one whatever
/// its params say).
pub(crate) fn only_per_request(name: &str) -> bool {
    METHODS
        .iter()
        .filter(|m| m.name == name)
        .all(|m| m.eras == PerRequest)
        && METHODS.iter().any(|m| m.name == name)
}

/// Params a method needs.
pub(in crate::server) fn required<'a, T: Deserialize<'a>>(
    cx: &'a ServerContext,
) -> Result<T, ErrorObject> {
    cx.request()
        .params()
        .ok_or_else(|| ErrorObject::invalid_params("missing params"))?
        .decode()
        .map_err(ErrorObject::invalid_params)
}

/// The `cursor` of a list request.
fn cursor(cx: &ServerContext) -> Result<Option<&str>, ErrorObject> {
    Ok(cx
        .request()
        .head()
        .cursor
        .optional("cursor")?
        .map(String::as_str))
}

/// The page of `items` that `cursor` (an index this server handed out) starts, at most
/// `size` long, each made by `item`, and the cursor of the next page if there is one.
fn page<E, T>(
    items: &[E],
    cursor: Option<&str>,
    size: usize,
    item: impl Fn(&E) -> T,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {c:?}")))?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].iter().map(item).collect(), next))
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn each_method_is_declared_once_per_era() {
        for per_request in [false, true] {
            for m in super::METHODS.iter().filter(|m| m.serves(per_request)) {
                let same = super::METHODS
                    .iter()
                    .filter(|o| o.name == m.name && o.serves(per_request))
                    .count();
                assert_eq!(same, 1, "{} (per request: {per_request})", m.name);
            }
        }
        assert!(super::only_per_request("server/discover"));
        assert!(!super::only_per_request("tasks/get"));
        assert!(!super::only_per_request("no/such"));
    }

    #[test]
    fn pages_and_rejects_bad_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2, |n| *n).expect("first page");
        assert_eq!((first, next.as_deref()), (vec![0, 1], Some("2")));
        let (last, next) = page(&items, Some("4"), 2, |n| *n).expect("last page");
        assert_eq!((last, next), (vec![4], None));
        assert!(page(&items, Some("x"), 2, |n| *n).is_err());
        assert!(page(&items, Some("9"), 2, |n| *n).is_err());
    }
}
