//! What the model calls each server's tools and prompts: the naming policy
//! (`server__tool` by default, sanitized, at most 64 characters), what happens when two
//! servers' items get the same name, and which remote tools are offered at all.
//!
//! The host keeps a map from catalog name to `(server, remote name)` and dispatches by
//! it; a catalog name is never parsed back into its parts, since a server name may
//! itself contain `__`.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use mcpflow_protocol::Tool;

/// The longest name most model providers accept for a function (OpenAI, Anthropic).
pub const MAX_NAME_LEN: usize = 64;

/// Hex digits of the hash that ends a shortened name.
const HASH_DIGITS: usize = 8;

/// How a server's tool (or prompt) is named in the catalog.
///
/// Every policy's result is then sanitized to `[A-Za-z0-9_-]` and cut to
/// [`MAX_NAME_LEN`] characters with a deterministic hash suffix ([`fit_name`]).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum NamePolicy {
    /// `server__tool` (the default).
    #[default]
    Prefixed,
    /// The remote name as it is: for a host of one server, or servers whose names are
    /// known not to clash (a clash is still caught by the [`CollisionPolicy`]).
    Unprefixed,
    /// `f(server, remote_name)`.
    Custom(NameFn),
}

/// Names a server's item: `(server, remote name) -> catalog name`.
pub type NameFn = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

impl fmt::Debug for NamePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamePolicy::Prefixed => f.write_str("Prefixed"),
            NamePolicy::Unprefixed => f.write_str("Unprefixed"),
            NamePolicy::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl NamePolicy {
    /// The catalog name of `remote` on `server`: the policy's name, sanitized and cut
    /// to [`MAX_NAME_LEN`].
    pub fn catalog_name(&self, server: &str, remote: &str) -> String {
        let raw = match self {
            NamePolicy::Prefixed => format!("{server}__{remote}"),
            NamePolicy::Unprefixed => remote.to_owned(),
            NamePolicy::Custom(f) => f(server, remote),
        };
        fit_name(&raw)
    }
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`, and when that
/// is longer than [`MAX_NAME_LEN`], its head followed by `_` and eight hex digits of a
/// hash of the whole unsanitized name: the same input always gives the same name, and
/// two long names that share a head still differ.
pub fn fit_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        return format!("_{:0width$x}", fnv1a(name) as u32, width = HASH_DIGITS);
    }
    if clean.len() <= MAX_NAME_LEN {
        return clean;
    }
    // ASCII after sanitizing, so any byte index is a char boundary.
    let head = &clean[..MAX_NAME_LEN - HASH_DIGITS - 1];
    format!(
        "{head}_{:0width$x}",
        fnv1a(name) as u32,
        width = HASH_DIGITS
    )
}

/// 64-bit FNV-1a: stable across Rust versions and platforms, unlike `DefaultHasher`,
/// so a shortened name stays the same from one run (and one release) to the next.
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// What the catalog does when two servers' items get the same catalog name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollisionPolicy {
    /// Offer neither, report the clash in the snapshot's
    /// [`collisions`](super::CatalogSnapshot::collisions) and as a
    /// [`HostEvent::NameCollision`](super::HostEvent::NameCollision); a call by that
    /// name fails saying which servers clash (the default).
    #[default]
    Error,
    /// Offer the one from the server configured first; report the clash.
    FirstWins,
    /// Offer the one from the server configured last; report the clash.
    LastWins,
}

/// Which of a server's tools the host offers, by their remote names. A tool must pass
/// the allow list (when set), miss the deny list, and satisfy the predicate (when set).
/// Checked when the catalog is built and again when a call is dispatched.
#[derive(Clone, Default)]
pub struct ToolFilter {
    allow: Option<BTreeSet<String>>,
    deny: BTreeSet<String>,
    predicate: Option<ToolPredicate>,
}

/// Decides whether a server's tool is offered: `(server name, tool)`.
pub type ToolPredicate = Arc<dyn Fn(&str, &Tool) -> bool + Send + Sync>;

impl fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFilter")
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .field("predicate", &self.predicate.is_some())
            .finish()
    }
}

impl ToolFilter {
    /// Every tool (the default).
    pub fn all() -> ToolFilter {
        ToolFilter::default()
    }

    /// Offer only these remote names.
    #[must_use]
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Never offer these remote names (wins over the allow list).
    #[must_use]
    pub fn deny<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// Offer a tool only when `predicate(server, tool)` holds.
    #[must_use]
    pub fn predicate(
        mut self,
        predicate: impl Fn(&str, &Tool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// Whether `tool` of `server` is offered.
    pub fn permits(&self, server: &str, tool: &Tool) -> bool {
        self.permits_name(&tool.name) && self.predicate.as_ref().is_none_or(|p| p(server, tool))
    }

    /// Whether the remote name passes the allow and deny lists.
    pub fn permits_name(&self, remote: &str) -> bool {
        !self.deny.contains(remote) && self.allow.as_ref().is_none_or(|a| a.contains(remote))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_prefixes_with_the_server() {
        assert_eq!(
            NamePolicy::default().catalog_name("files", "read"),
            "files__read"
        );
        assert_eq!(NamePolicy::Unprefixed.catalog_name("files", "read"), "read");
        let custom = NamePolicy::Custom(Arc::new(|s, t| format!("{t}@{s}")));
        assert_eq!(custom.catalog_name("files", "read"), "read_files");
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(fit_name("my server.tool/x é"), "my_server_tool_x__");
        assert_eq!(fit_name("ok-name_1"), "ok-name_1");
        let empty = fit_name("");
        assert_eq!(empty.len(), 1 + HASH_DIGITS);
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let exact = "a".repeat(MAX_NAME_LEN);
        assert_eq!(fit_name(&exact), exact, "64 characters fit as they are");
        let long = format!("{}x", "a".repeat(MAX_NAME_LEN));
        let cut = fit_name(&long);
        assert_eq!(cut.len(), MAX_NAME_LEN);
        assert_eq!(cut, fit_name(&long), "the same name gives the same cut");
        // Pinned: the hash must not change between runs or releases.
        assert_eq!(&cut[..MAX_NAME_LEN - HASH_DIGITS - 1], &"a".repeat(55));
        assert_eq!(
            &cut[MAX_NAME_LEN - HASH_DIGITS..],
            format!("{:08x}", fnv1a(&long) as u32)
        );
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c, "FNV-1a test vector");
        let other = format!("{}y", "a".repeat(MAX_NAME_LEN));
        assert_ne!(fit_name(&other), cut, "names sharing a head differ by hash");
        let unicode = "é".repeat(70);
        assert_eq!(fit_name(&unicode).len(), MAX_NAME_LEN);
    }

    #[test]
    fn filters_check_allow_deny_and_predicate() {
        let tool = |name: &str| Tool::new(name, "", Tool::empty_input_schema());
        let all = ToolFilter::all();
        assert!(all.permits("s", &tool("x")));
        let allow = ToolFilter::all().allow(["a", "b"]).deny(["b"]);
        assert!(allow.permits("s", &tool("a")));
        assert!(!allow.permits("s", &tool("b")), "deny wins over allow");
        assert!(!allow.permits("s", &tool("c")));
        let predicate = ToolFilter::all().predicate(|server, t| server == "s" && t.name != "x");
        assert!(predicate.permits("s", &tool("y")));
        assert!(!predicate.permits("s", &tool("x")));
        assert!(!predicate.permits("t", &tool("y")));
    }
}
