//! What the catalog hands out: immutable snapshots of every server's tools, prompts,
//! resources and templates under their catalog names, and the changes between two.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcpflow_protocol::Tool;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};

/// A tool in the catalog: the name the model calls it by, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogTool {
    pub(crate) name: String,
    pub(crate) server: Arc<str>,
    pub(crate) tool: Tool,
}

impl CatalogTool {
    /// The catalog name (what the model calls).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server that offers it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool as the server lists it (its remote name, schemas, annotations).
    pub fn remote(&self) -> &Tool {
        &self.tool
    }

    /// The tool as a model should see it: the server's entry under the catalog name.
    pub fn to_model_tool(&self) -> Tool {
        let mut tool = self.tool.clone();
        tool.name.clone_from(&self.name);
        tool
    }
}

/// A prompt in the catalog, under its catalog name.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogPrompt {
    pub(crate) name: String,
    pub(crate) server: Arc<str>,
    pub(crate) prompt: Prompt,
}

impl CatalogPrompt {
    /// The catalog name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server that offers it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The prompt as the server lists it.
    pub fn remote(&self) -> &Prompt {
        &self.prompt
    }
}

/// A resource or resource template and the server that offers it (URIs are not
/// renamed: they are addresses, not names a model chooses between).
#[derive(Debug, Clone, PartialEq)]
pub struct Served<T> {
    /// The server that offers it.
    pub server: Arc<str>,
    /// The entry as the server lists it.
    pub item: T,
}

/// The kind of a catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ItemKind {
    /// A tool.
    Tool,
    /// A prompt.
    Prompt,
    /// A resource.
    Resource,
    /// A resource template.
    Template,
}

/// Two or more servers' items that got one catalog name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// Tools or prompts.
    pub kind: ItemKind,
    /// The catalog name they share.
    pub name: String,
    /// The servers, in configuration order (a server twice when two of its own names
    /// sanitize alike).
    pub servers: Vec<Arc<str>>,
    /// The server whose item is offered, or `None` under [`CollisionPolicy::Error`](super::CollisionPolicy::Error).
    pub offered: Option<Arc<str>>,
}

/// One entry of a [`CatalogChange`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ItemRef {
    /// What it is.
    pub kind: ItemKind,
    /// The server that offers (or offered) it.
    pub server: Arc<str>,
    /// Its catalog name (a URI or URI template for resources and templates).
    pub name: String,
}

/// What a new snapshot changed, for the agent loop to rebuild its tool list at the
/// next model turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChange {
    /// The generation of the snapshot that made these changes.
    pub generation: u64,
    /// Entries new in this snapshot.
    pub added: Vec<ItemRef>,
    /// Entries gone from this snapshot.
    pub removed: Vec<ItemRef>,
    /// Entries whose definition (schema, description, server) changed.
    pub changed: Vec<ItemRef>,
}

impl CatalogChange {
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The catalog at one moment: immutable, cheap to share. Take one per model turn.
#[derive(Debug, Clone, Default)]
pub struct CatalogSnapshot {
    pub(crate) generation: u64,
    pub(crate) tools: BTreeMap<String, CatalogTool>,
    pub(crate) prompts: BTreeMap<String, CatalogPrompt>,
    pub(crate) resources: Vec<Served<Resource>>,
    pub(crate) templates: Vec<Served<ResourceTemplate>>,
    pub(crate) collisions: Vec<Collision>,
}

impl CatalogSnapshot {
    /// Counts the snapshots that changed something; 0 before the first commit.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every tool offered, by catalog name.
    pub fn tools(&self) -> impl Iterator<Item = &CatalogTool> {
        self.tools.values()
    }

    /// The tool offered under `name`.
    pub fn tool(&self, name: &str) -> Option<&CatalogTool> {
        self.tools.get(name)
    }

    /// The catalog names of every tool, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The tools as a model should see them (under their catalog names).
    pub fn model_tools(&self) -> Vec<Tool> {
        self.tools
            .values()
            .map(CatalogTool::to_model_tool)
            .collect()
    }

    /// Every prompt, by catalog name.
    pub fn prompts(&self) -> impl Iterator<Item = &CatalogPrompt> {
        self.prompts.values()
    }

    /// The prompt offered under `name`.
    pub fn prompt(&self, name: &str) -> Option<&CatalogPrompt> {
        self.prompts.get(name)
    }

    /// Every resource, in server order.
    pub fn resources(&self) -> &[Served<Resource>] {
        &self.resources
    }

    /// Every resource template, in server order.
    pub fn templates(&self) -> &[Served<ResourceTemplate>] {
        &self.templates
    }

    /// Names that two or more items share, and what the collision policy did.
    pub fn collisions(&self) -> &[Collision] {
        &self.collisions
    }

    /// The collision on a tool name, if any.
    pub fn tool_collision(&self, name: &str) -> Option<&Collision> {
        self.collisions
            .iter()
            .find(|c| c.kind == ItemKind::Tool && c.name == name)
    }
}
