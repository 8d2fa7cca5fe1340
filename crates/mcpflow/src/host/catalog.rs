//! The live catalog: every server's tools, prompts, resources and resource templates
//! under one set of names, as immutable snapshots swapped whole.
//!
//! Fetching is the client's: each connection's lists refresh themselves on
//! `list_changed` in a single flight that fetches every page before it replaces a list,
//! loops at most once more for any burst of notifications, and never lets an older
//! fetch replace a newer one (`client/cache.rs`). The catalog follows those lists
//! ([`follow_lists`]) and, for each change, builds a new [`CatalogSnapshot`] from the
//! latest list of every server, swaps it in and announces a [`CatalogChange`]. A
//! snapshot someone holds (a model turn in flight) never changes under them.
//!
//! Each commit carries the epoch of the connection it came from, so the lists of a
//! connection that has since been replaced can never overwrite the new connection's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcpflow_protocol::Tool;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::HostEvent;
use super::names::{CollisionPolicy, NamePolicy, ToolFilter};
use super::snapshot::{
    CatalogChange, CatalogPrompt, CatalogSnapshot, CatalogTool, Collision, ItemKind, ItemRef,
    Served,
};
use crate::client::ClientHandle;
use crate::client::cache::ListCache;

/// The latest lists of one connection (`None`: not offered, or never fetched).
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerLists {
    pub(crate) tools: Option<Arc<Vec<Tool>>>,
    pub(crate) prompts: Option<Arc<Vec<Prompt>>>,
    pub(crate) resources: Option<Arc<Vec<Resource>>>,
    pub(crate) templates: Option<Arc<Vec<ResourceTemplate>>>,
}

/// How the catalog names and admits items.
#[derive(Debug, Clone, Default)]
pub(crate) struct CatalogRules {
    pub(crate) names: NamePolicy,
    pub(crate) collisions: CollisionPolicy,
}

struct CatalogState {
    lists: Vec<ServerLists>,
    epochs: Vec<u64>,
}

/// The host's catalog: the latest lists of each server, and the snapshot built from them.
pub(crate) struct Catalog {
    rules: CatalogRules,
    /// Server names and tool filters, in configuration order.
    servers: Vec<(Arc<str>, ToolFilter)>,
    state: Mutex<CatalogState>,
    current: watch::Sender<Arc<CatalogSnapshot>>,
    events: broadcast::Sender<HostEvent>,
}

impl Catalog {
    pub(crate) fn new(
        rules: CatalogRules,
        servers: Vec<(Arc<str>, ToolFilter)>,
        events: broadcast::Sender<HostEvent>,
    ) -> Catalog {
        let n = servers.len();
        Catalog {
            rules,
            servers,
            state: Mutex::new(CatalogState {
                lists: vec![ServerLists::default(); n],
                epochs: vec![0; n],
            }),
            current: watch::channel(Arc::new(CatalogSnapshot::default())).0,
            events,
        }
    }

    /// The current snapshot.
    pub(crate) fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.current.borrow().clone()
    }

    /// A receiver that sees each new snapshot.
    pub(crate) fn watch(&self) -> watch::Receiver<Arc<CatalogSnapshot>> {
        self.current.subscribe()
    }

    /// The filter of server `index`.
    pub(crate) fn filter(&self, index: usize) -> Option<&ToolFilter> {
        self.servers.get(index).map(|(_, f)| f)
    }

    /// Replace server `index`'s lists with those of the connection numbered `epoch`,
    /// unless a later connection already committed. Whether it was applied.
    pub(crate) fn commit(&self, index: usize, epoch: u64, lists: ServerLists) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(known) = state.epochs.get(index).copied() else {
            return false;
        };
        if epoch < known {
            tracing::debug!(server = %self.servers[index].0, epoch, known, "ignored the lists of a replaced connection");
            return false;
        }
        state.epochs[index] = epoch;
        state.lists[index] = lists;
        let old = self.snapshot();
        let mut next = self.build(&state.lists);
        let mut change = diff(&old, &next);
        if change.is_empty() && next.collisions == old.collisions {
            return true;
        }
        next.generation = old.generation + 1;
        change.generation = next.generation;
        let fresh: Vec<Collision> = next
            .collisions
            .iter()
            .filter(|c| !old.collisions.contains(c))
            .cloned()
            .collect();
        self.current.send_replace(Arc::new(next));
        // Sent under the lock so that events arrive in generation order.
        for collision in fresh {
            tracing::warn!(name = %collision.name, servers = ?collision.servers, offered = ?collision.offered, "catalog name collision");
            let _ = self.events.send(HostEvent::NameCollision(collision));
        }
        if !change.is_empty() {
            let _ = self
                .events
                .send(HostEvent::CatalogChanged(Arc::new(change)));
        }
        true
    }

    fn build(&self, lists: &[ServerLists]) -> CatalogSnapshot {
        let mut tools: BTreeMap<String, Vec<CatalogTool>> = BTreeMap::new();
        let mut prompts: BTreeMap<String, Vec<CatalogPrompt>> = BTreeMap::new();
        let mut snapshot = CatalogSnapshot::default();
        for ((server, filter), lists) in self.servers.iter().zip(lists) {
            for tool in lists.tools.iter().flat_map(|l| l.iter()) {
                if !filter.permits(server, tool) {
                    continue;
                }
                let name = self.rules.names.catalog_name(server, &tool.name);
                tools.entry(name.clone()).or_default().push(CatalogTool {
                    name,
                    server: server.clone(),
                    tool: tool.clone(),
                });
            }
            for prompt in lists.prompts.iter().flat_map(|l| l.iter()) {
                let name = self.rules.names.catalog_name(server, &prompt.name);
                prompts
                    .entry(name.clone())
                    .or_default()
                    .push(CatalogPrompt {
                        name,
                        server: server.clone(),
                        prompt: prompt.clone(),
                    });
            }
            let served = |item| Served {
                server: server.clone(),
                item,
            };
            snapshot.resources.extend(
                lists
                    .resources
                    .iter()
                    .flat_map(|l| l.iter().cloned())
                    .map(served),
            );
            snapshot
                .templates
                .extend(lists.templates.iter().flat_map(|l| {
                    l.iter().cloned().map(|item| Served {
                        server: server.clone(),
                        item,
                    })
                }));
        }
        let policy = self.rules.collisions;
        snapshot.tools = settle(
            ItemKind::Tool,
            tools,
            policy,
            &mut snapshot.collisions,
            |t| &t.server,
        );
        snapshot.prompts = settle(
            ItemKind::Prompt,
            prompts,
            policy,
            &mut snapshot.collisions,
            |p| &p.server,
        );
        snapshot
    }
}

/// Apply the collision policy to each name that more than one item claims.
fn settle<T>(
    kind: ItemKind,
    claims: BTreeMap<String, Vec<T>>,
    policy: CollisionPolicy,
    collisions: &mut Vec<Collision>,
    server: impl Fn(&T) -> &Arc<str>,
) -> BTreeMap<String, T> {
    let mut offered = BTreeMap::new();
    for (name, mut items) in claims {
        if items.len() == 1 {
            offered.insert(name, items.remove(0));
            continue;
        }
        let servers = items.iter().map(|i| server(i).clone()).collect();
        let winner = match policy {
            CollisionPolicy::Error => None,
            CollisionPolicy::FirstWins => Some(items.remove(0)),
            CollisionPolicy::LastWins => items.pop(),
        };
        collisions.push(Collision {
            kind,
            name: name.clone(),
            servers,
            offered: winner.as_ref().map(|w| server(w).clone()),
        });
        if let Some(winner) = winner {
            offered.insert(name, winner);
        }
    }
    offered
}

/// What `new` added, removed and changed relative to `old`.
fn diff(old: &CatalogSnapshot, new: &CatalogSnapshot) -> CatalogChange {
    let mut change = CatalogChange::default();
    let tool = |t: &CatalogTool| (t.server.clone(), t.name.clone());
    compare(ItemKind::Tool, &old.tools, &new.tools, tool, &mut change);
    let prompt = |p: &CatalogPrompt| (p.server.clone(), p.name.clone());
    compare(
        ItemKind::Prompt,
        &old.prompts,
        &new.prompts,
        prompt,
        &mut change,
    );
    let uri = |r: &Resource| r.uri.clone();
    compare_served(
        ItemKind::Resource,
        &old.resources,
        &new.resources,
        uri,
        &mut change,
    );
    let template = |t: &ResourceTemplate| t.uri_template.clone();
    compare_served(
        ItemKind::Template,
        &old.templates,
        &new.templates,
        template,
        &mut change,
    );
    change
}

/// [`compare`] for entries keyed by server and address.
fn compare_served<T: Clone + PartialEq>(
    kind: ItemKind,
    old: &[Served<T>],
    new: &[Served<T>],
    address: impl Fn(&T) -> String,
    change: &mut CatalogChange,
) {
    let keyed = |items: &[Served<T>]| -> BTreeMap<(Arc<str>, String), Served<T>> {
        items
            .iter()
            .map(|s| ((s.server.clone(), address(&s.item)), s.clone()))
            .collect()
    };
    let id = |s: &Served<T>| (s.server.clone(), address(&s.item));
    compare(kind, &keyed(old), &keyed(new), id, change);
}

fn compare<K: Ord, T: PartialEq>(
    kind: ItemKind,
    old: &BTreeMap<K, T>,
    new: &BTreeMap<K, T>,
    id: impl Fn(&T) -> (Arc<str>, String),
    change: &mut CatalogChange,
) {
    let item = |t: &T| {
        let (server, name) = id(t);
        ItemRef { kind, server, name }
    };
    for (key, value) in new {
        match old.get(key) {
            None => change.added.push(item(value)),
            Some(before) if before != value => change.changed.push(item(value)),
            Some(_) => {}
        }
    }
    for (key, value) in old {
        if !new.contains_key(key) {
            change.removed.push(item(value));
        }
    }
}

/// Follow one connection's lists until `stop`: make each list the server declares
/// self-refreshing, then hand every new state of them to `on_lists` with the errors of
/// the lists whose last fetch failed (the list it had before is kept, never emptied).
pub(crate) async fn follow_lists(
    client: ClientHandle,
    stop: CancellationToken,
    mut on_lists: impl FnMut(ServerLists, Vec<String>),
) {
    let Declared {
        tools,
        prompts,
        resources,
    } = Declared::of(&client);
    let caches = client.caches();
    // Subscribed before the first reads, so no completed fetch goes unseen.
    let mut changes = [
        caches.tools.subscribe(),
        caches.prompts.subscribe(),
        caches.resources.subscribe(),
        caches.templates.subscribe(),
    ];
    let first = async {
        tokio::join!(
            load(tools, &caches.tools),
            load(prompts, &caches.prompts),
            load(resources, &caches.resources),
            load(resources, &caches.templates),
        )
    };
    tokio::select! {
        () = stop.cancelled() => return,
        _ = first => {}
    }
    loop {
        let mut errors = Vec::new();
        let lists = ServerLists {
            tools: read(tools, &caches.tools, "tools/list", &mut errors),
            prompts: read(prompts, &caches.prompts, "prompts/list", &mut errors),
            resources: read(resources, &caches.resources, "resources/list", &mut errors),
            templates: read(
                resources,
                &caches.templates,
                "resources/templates/list",
                &mut errors,
            ),
        };
        on_lists(lists, errors);
        let [a, b, c, d] = &mut changes;
        let changed = tokio::select! {
            () = stop.cancelled() => return,
            r = a.changed() => r,
            r = b.changed() => r,
            r = c.changed() => r,
            r = d.changed() => r,
        };
        if changed.is_err() {
            return;
        }
    }
}

/// Which lists a server offers, by its capabilities.
struct Declared {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Declared {
    fn of(client: &ClientHandle) -> Declared {
        let caps = client.server().map(|init| &init.capabilities);
        Declared {
            tools: caps.is_some_and(|c| c.tools.is_some()),
            prompts: caps.is_some_and(|c| c.prompts.is_some()),
            resources: caps.is_some_and(|c| c.resources.is_some()),
        }
    }
}

/// Mark every list the server offers stale and wait for the refetch (as after a
/// `list_changed` of each); [`follow_lists`] commits the result.
pub(crate) async fn refetch(client: &ClientHandle) {
    let declared = Declared::of(client);
    let caches = client.caches();
    let stale = |declared: bool, mark: &dyn Fn()| {
        if declared {
            mark();
        }
    };
    stale(declared.tools, &|| caches.tools.mark_dirty());
    stale(declared.prompts, &|| caches.prompts.mark_dirty());
    stale(declared.resources, &|| caches.resources.mark_dirty());
    stale(declared.resources, &|| caches.templates.mark_dirty());
    tokio::join!(
        load(declared.tools, &caches.tools),
        load(declared.prompts, &caches.prompts),
        load(declared.resources, &caches.resources),
        load(declared.resources, &caches.templates),
    );
}

/// The first read of a declared list: it makes the list self-refreshing from then on.
async fn load<T: Clone + Send + Sync + 'static>(declared: bool, cache: &Arc<ListCache<T>>) {
    if declared {
        // A failure is read back with the list, by `read`.
        let _ = cache.get().await;
    }
}

fn read<T: Clone + Send + Sync + 'static>(
    declared: bool,
    cache: &Arc<ListCache<T>>,
    method: &str,
    errors: &mut Vec<String>,
) -> Option<Arc<Vec<T>>> {
    if !declared {
        return None;
    }
    if let Some(e) = cache.last_error() {
        errors.push(format!("{method}: {e}"));
    }
    cache.snapshot()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        Tool::new(name, "", Tool::empty_input_schema())
    }

    fn catalog(
        names: NamePolicy,
        collisions: CollisionPolicy,
    ) -> (Catalog, broadcast::Receiver<HostEvent>) {
        let (events, rx) = broadcast::channel(64);
        let servers = vec![
            (Arc::from("a"), ToolFilter::all()),
            (Arc::from("b"), ToolFilter::all().deny(["hidden"])),
        ];
        (
            Catalog::new(CatalogRules { names, collisions }, servers, events),
            rx,
        )
    }

    fn lists(tools: &[&str]) -> ServerLists {
        ServerLists {
            tools: Some(Arc::new(tools.iter().map(|t| tool(t)).collect())),
            ..ServerLists::default()
        }
    }

    #[test]
    fn prefixed_names_keep_servers_apart_and_filters_apply() {
        let (catalog, _rx) = catalog(NamePolicy::Prefixed, CollisionPolicy::Error);
        catalog.commit(0, 1, lists(&["search", "hidden"]));
        catalog.commit(1, 1, lists(&["search", "hidden"]));
        let snapshot = catalog.snapshot();
        assert_eq!(
            snapshot.tool_names(),
            ["a__hidden", "a__search", "b__search"]
        );
        assert_eq!(snapshot.tool("b__search").unwrap().remote().name, "search");
        assert_eq!(snapshot.model_tools()[0].name, "a__hidden");
        assert!(snapshot.collisions().is_empty());
    }

    #[test]
    fn each_collision_policy_is_reported() {
        for (policy, offered) in [
            (CollisionPolicy::Error, None),
            (CollisionPolicy::FirstWins, Some("a")),
            (CollisionPolicy::LastWins, Some("b")),
        ] {
            let (catalog, mut rx) = catalog(NamePolicy::Unprefixed, policy);
            catalog.commit(0, 1, lists(&["search", "only_a"]));
            catalog.commit(1, 1, lists(&["search"]));
            let snapshot = catalog.snapshot();
            let collision = snapshot.tool_collision("search").expect("reported");
            assert_eq!(collision.servers, [Arc::from("a"), Arc::from("b")]);
            assert_eq!(collision.offered.as_deref(), offered, "{policy:?}");
            assert_eq!(
                snapshot.tool("search").map(CatalogTool::server),
                offered,
                "{policy:?}"
            );
            let mut saw_event = false;
            while let Ok(event) = rx.try_recv() {
                saw_event |= matches!(event, HostEvent::NameCollision(c) if c.name == "search");
            }
            assert!(saw_event, "{policy:?}: a collision event");
        }
    }

    #[test]
    fn a_replaced_connection_cannot_commit_and_changes_are_diffed() {
        let (catalog, mut rx) = catalog(NamePolicy::Prefixed, CollisionPolicy::Error);
        assert!(catalog.commit(0, 2, lists(&["x", "y"])));
        assert!(!catalog.commit(0, 1, lists(&["old"])), "an older epoch");
        assert_eq!(catalog.snapshot().tool_names(), ["a__x", "a__y"]);
        let mut changed = lists(&["y", "z"]);
        if let Some(tools) = changed.tools.as_mut() {
            Arc::make_mut(tools)[0].description = Some("new".into());
        }
        assert!(catalog.commit(0, 2, changed));
        let mut last = None;
        while let Ok(event) = rx.try_recv() {
            if let HostEvent::CatalogChanged(change) = event {
                last = Some(change);
            }
        }
        let change = last.expect("a change event");
        let names = |v: &[ItemRef]| v.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        assert_eq!(change.generation, 2);
        assert_eq!(names(&change.added), ["a__z"]);
        assert_eq!(names(&change.removed), ["a__x"]);
        assert_eq!(names(&change.changed), ["a__y"]);
        let before = catalog.snapshot();
        assert!(catalog.commit(0, 2, lists(&["y", "z"]).clone()));
        assert!(
            rx.try_recv().is_ok(),
            "the description change back is a change"
        );
        let held = before;
        assert_eq!(held.generation(), 2, "a held snapshot never changes");
    }
}
