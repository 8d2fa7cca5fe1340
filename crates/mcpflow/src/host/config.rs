//! The `mcpServers` configuration file.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!                "env": { "DEBUG": "1" } },
//!     "remote": { "type": "http", "url": "https://example.com/mcp",
//!                 "headers": { "Authorization": "Bearer ${env:TOKEN}" } }
//!   }
//! }
//! ```
//!
//! Each entry has either `command` (with `args`, `env`, `cwd`) or `url` (with
//! `headers`, and `oauth` for a client that signs in without a browser, see
//! [`OAuthSettings`]); `type` is `stdio`, `http`, `streamable-http` (also
//! `streamableHttp`) or `sse`, and is inferred when absent. `disabled: true` entries are kept but refused by
//! [`ServersConfig::server`]. Unknown fields are ignored, as the clients that write
//! these files add their own.
//!
//! Variables: the clients disagree. VS Code and Cursor expand `${env:NAME}`, Claude
//! Code expands `${NAME}` and `${NAME:-default}`, Claude Desktop expands nothing. The
//! parser keeps the text as written; [`ServerConfig::expanded`] expands all three forms
//! (and Cursor's `${userHome}`) in `command`, `args`, `env`, `cwd`, `url` and `headers`
//! from a lookup you give, and names the server, field and variable when one is unset.
//! Other `${...}` forms (VS Code's `${input:...}`, `${workspaceFolder}`) are errors
//! rather than silently sent as text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::transport::{ChildProcess, ChildProcessBuilder};

/// A configuration file could not be read, or a server in it cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("could not read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("not valid JSON: {0}")]
    Json(String),
    /// Neither `mcpServers` nor `servers` holds an object of servers.
    #[error("no `mcpServers` (or VS Code's `servers`) object at the top level")]
    NoServers,
    /// A server's entry is malformed.
    #[error("server `{server}`: {reason}")]
    Invalid {
        /// The server's name.
        server: String,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// No server of that name.
    #[error("no server named `{name}`; the file has: {known}")]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The names the file has, comma-separated.
        known: String,
    },
    /// The server is marked `disabled: true`.
    #[error("server `{0}` is disabled in the file (`\"disabled\": true`)")]
    Disabled(String),
    /// A `${...}` reference could not be expanded.
    #[error("server `{server}`, `{field}`: {reason}")]
    Variable {
        /// The server's name.
        server: String,
        /// The field that holds the reference.
        field: String,
        /// Which variable, and why.
        reason: String,
    },
}

/// Every server of a configuration file, by name.
///
/// ```
/// use mcpflow::host::{ServerConfig, ServersConfig};
///
/// let file = r#"{ "mcpServers": {
///     "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
///     "remote": { "url": "https://example.com/mcp", "headers": { "X-Key": "${env:KEY}" } }
/// } }"#;
/// let config = ServersConfig::from_json(file)?;
/// assert_eq!(config.names().collect::<Vec<_>>(), ["memory", "remote"]);
///
/// let ServerConfig::Stdio(memory) = config.server("memory")? else { unreachable!() };
/// assert_eq!(memory.command, "npx");
///
/// let remote = config.server("remote")?.expanded(|name| (name == "KEY").then(|| "k1".to_owned()))?;
/// let ServerConfig::Remote(remote) = remote else { unreachable!() };
/// assert_eq!(remote.headers["X-Key"], "k1");
/// # Ok::<(), mcpflow::host::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServersConfig {
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    config: ServerConfig,
    disabled: bool,
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A command to start, spoken to over its stdin and stdout.
    Stdio(StdioServer),
    /// A server at a URL.
    Remote(RemoteServer),
}

/// A server started as a child process.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StdioServer {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables to set for it, on top of this process's environment.
    pub env: BTreeMap<String, String>,
    /// Start it with `env` alone, none of this process's environment
    /// ([`ChildProcessBuilder::env_clear`](crate::transport::ChildProcessBuilder::env_clear)).
    /// No configuration file sets it; the `mcpflow` command's `--env-clear` does.
    pub env_clear: bool,
    /// The directory to start it in.
    pub cwd: Option<PathBuf>,
}

impl StdioServer {
    /// The child process this entry starts: its command and arguments, its environment
    /// and its directory. Options the entry does not hold (a close grace) can be added.
    ///
    /// ```
    /// use mcpflow::host::StdioServer;
    ///
    /// let mut server = StdioServer::default();
    /// server.command = "my-mcp-server".to_owned();
    /// server.env.insert("TOKEN".to_owned(), "t0k".to_owned());
    /// let process = server.child_process(); // `spawn()` starts it
    /// # drop(process);
    /// ```
    pub fn child_process(&self) -> ChildProcessBuilder {
        let mut process = ChildProcess::builder(&self.command).args(&self.args);
        if self.env_clear {
            process = process.env_clear();
        }
        for (key, value) in &self.env {
            process = process.env(key, value);
        }
        if let Some(dir) = &self.cwd {
            process = process.current_dir(dir);
        }
        process
    }
}

/// A server reached over HTTP.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RemoteServer {
    /// The endpoint.
    pub url: String,
    /// Headers to send with every request.
    pub headers: BTreeMap<String, String>,
    /// Which HTTP transport the file names.
    pub transport: RemoteTransport,
    /// How to obtain tokens, when the entry says (`oauth`).
    pub oauth: Option<OAuthSettings>,
}

/// An HTTP entry's `oauth` object: the OAuth client it signs in as, for clients that
/// have their own credentials (a machine client with the client-credentials grant).
/// Variables expand in every field, as elsewhere in the entry.
///
/// ```json
/// { "url": "https://mcp.example.com/mcp",
///   "oauth": { "grant": "client_credentials", "clientId": "reporting-agent",
///              "clientSecret": "${env:AGENT_SECRET}", "scope": "mcp:read" } }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OAuthSettings {
    /// `client_credentials`, `workload_identity`, or `authorization_code` (a browser
    /// sign-in; the default).
    pub grant: Option<String>,
    /// The client ID registered at the authorization server.
    pub client_id: Option<String>,
    /// The client's secret (`client_secret_basic` or `_post`).
    pub client_secret: Option<String>,
    /// A PKCS#8 PEM file holding the client's P-256 key, for `private_key_jwt`.
    pub client_key_file: Option<PathBuf>,
    /// The scope to ask for.
    pub scope: Option<String>,
    /// The file holding the workload's identity token, for the `workload_identity`
    /// grant (RFC 7523 JWT bearer).
    pub identity_token_file: Option<PathBuf>,
}

/// The HTTP transport an entry names with `type`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteTransport {
    /// Streamable HTTP (`http`, `streamable-http`, or no `type`).
    #[default]
    StreamableHttp,
    /// The legacy HTTP+SSE transport of 2024-11-05 (`sse`).
    Sse,
}

/// One entry as written; unknown fields are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    // Windsurf writes `serverUrl`.
    #[serde(alias = "serverUrl")]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    oauth: Option<OAuthSettings>,
    #[serde(default)]
    disabled: bool,
}

impl ServersConfig {
    /// Read and parse a file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read, else as [`from_json`](Self::from_json).
    pub fn from_file(path: impl AsRef<Path>) -> Result<ServersConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        ServersConfig::from_json(&text)
    }

    /// Parse the text of a file.
    ///
    /// # Errors
    /// [`ConfigError::Json`] for text that is not JSON, [`ConfigError::NoServers`]
    /// without a servers object, [`ConfigError::Invalid`] for a malformed entry.
    pub fn from_json(text: &str) -> Result<ServersConfig, ConfigError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let servers = root
            .get("mcpServers")
            .or_else(|| root.get("servers"))
            .and_then(Value::as_object)
            .ok_or(ConfigError::NoServers)?;
        let mut config = ServersConfig::default();
        for (name, entry) in servers {
            let invalid = |reason: String| ConfigError::Invalid {
                server: name.clone(),
                reason,
            };
            let raw: RawEntry = serde_path_to_error::deserialize(entry).map_err(|e| {
                let path = e.path().to_string();
                if path == "." {
                    invalid(e.into_inner().to_string())
                } else {
                    invalid(format!("`{path}`: {}", e.into_inner()))
                }
            })?;
            let disabled = raw.disabled;
            let config_of = entry_config(raw).map_err(invalid)?;
            config.servers.insert(
                name.clone(),
                Entry {
                    config: config_of,
                    disabled,
                },
            );
        }
        Ok(config)
    }

    /// The names of the servers, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Whether the server `name` is marked `disabled`.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.servers.get(name).is_some_and(|e| e.disabled)
    }

    /// The server `name`, as written (see [`ServerConfig::expanded`]).
    ///
    /// # Errors
    /// [`ConfigError::UnknownServer`] (listing the names there are) or
    /// [`ConfigError::Disabled`].
    pub fn server(&self, name: &str) -> Result<&ServerConfig, ConfigError> {
        match self.servers.get(name) {
            Some(entry) if entry.disabled => Err(ConfigError::Disabled(name.to_owned())),
            Some(entry) => Ok(&entry.config),
            None => Err(ConfigError::UnknownServer {
                name: name.to_owned(),
                known: if self.servers.is_empty() {
                    "no servers".to_owned()
                } else {
                    self.names().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }
}

fn entry_config(raw: RawEntry) -> Result<ServerConfig, String> {
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let stdio = match (kind.as_deref(), &raw.command, &raw.url) {
        (Some("stdio"), _, _) => true,
        (Some("http" | "streamable-http" | "streamablehttp" | "sse"), _, _) => false,
        (Some(other), _, _) => {
            return Err(format!(
                "`type` is `{other}`; expected `stdio`, `http`, `streamable-http` or `sse`"
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err("has both `command` and `url`; set `type` to choose one".to_owned());
        }
        (None, Some(_), None) => true,
        (None, None, Some(_)) => false,
        (None, None, None) => return Err("needs `command` (stdio) or `url` (HTTP)".to_owned()),
    };
    if stdio {
        let command = raw
            .command
            .filter(|c| !c.trim().is_empty())
            .ok_or("`command` is missing or empty (`type` is `stdio`)")?;
        Ok(ServerConfig::Stdio(StdioServer {
            command,
            args: raw.args,
            env: raw.env,
            env_clear: false,
            cwd: raw.cwd.map(PathBuf::from),
        }))
    } else {
        let url = raw
            .url
            .filter(|u| !u.trim().is_empty())
            .ok_or("`url` is missing or empty (the server is reached over HTTP)")?;
        Ok(ServerConfig::Remote(RemoteServer {
            url,
            headers: raw.headers,
            oauth: raw.oauth,
            transport: if kind.as_deref() == Some("sse") {
                RemoteTransport::Sse
            } else {
                RemoteTransport::StreamableHttp
            },
        }))
    }
}

impl ServerConfig {
    /// A copy with `${env:NAME}`, `${NAME}`, `${NAME:-default}` and `${userHome}`
    /// expanded through `lookup` (e.g. `|n| std::env::var(n).ok()`); `server` names the
    /// entry in errors.
    ///
    /// # Errors
    /// [`ConfigError::Variable`] naming the field and the variable, for an unset
    /// variable without a default or a reference form that is not supported.
    pub fn expanded(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, ConfigError> {
        self.expanded_as("", &lookup)
    }

    /// As [`expanded`](Self::expanded), naming the server `server` in errors.
    ///
    /// # Errors
    /// As [`expanded`](Self::expanded).
    pub fn expanded_for(
        &self,
        server: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, ConfigError> {
        self.expanded_as(server, &lookup)
    }

    fn expanded_as(
        &self,
        server: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, ConfigError> {
        let field = |field: String, text: &str| {
            expand(text, lookup).map_err(|reason| ConfigError::Variable {
                server: server.to_owned(),
                field,
                reason,
            })
        };
        match self {
            ServerConfig::Stdio(s) => {
                let mut out = StdioServer {
                    command: field("command".to_owned(), &s.command)?,
                    env_clear: s.env_clear,
                    ..StdioServer::default()
                };
                for (i, arg) in s.args.iter().enumerate() {
                    out.args.push(field(format!("args[{i}]"), arg)?);
                }
                for (k, v) in &s.env {
                    out.env.insert(k.clone(), field(format!("env.{k}"), v)?);
                }
                if let Some(cwd) = &s.cwd {
                    let text = cwd.to_string_lossy();
                    out.cwd = Some(PathBuf::from(field("cwd".to_owned(), &text)?));
                }
                Ok(ServerConfig::Stdio(out))
            }
            ServerConfig::Remote(r) => {
                let mut out = RemoteServer {
                    url: field("url".to_owned(), &r.url)?,
                    transport: r.transport,
                    ..RemoteServer::default()
                };
                for (k, v) in &r.headers {
                    out.headers
                        .insert(k.clone(), field(format!("headers.{k}"), v)?);
                }
                if let Some(oauth) = &r.oauth {
                    let text = |name: &str, value: &Option<String>| {
                        value
                            .as_deref()
                            .map(|v| field(format!("oauth.{name}"), v))
                            .transpose()
                    };
                    let path_text =
                        |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
                    let key_file = path_text(&oauth.client_key_file);
                    let token_file = path_text(&oauth.identity_token_file);
                    out.oauth = Some(OAuthSettings {
                        grant: text("grant", &oauth.grant)?,
                        client_id: text("clientId", &oauth.client_id)?,
                        client_secret: text("clientSecret", &oauth.client_secret)?,
                        client_key_file: text("clientKeyFile", &key_file)?.map(PathBuf::from),
                        scope: text("scope", &oauth.scope)?,
                        identity_token_file: text("identityTokenFile", &token_file)?
                            .map(PathBuf::from),
                    });
                }
                Ok(ServerConfig::Remote(out))
            }
        }
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Expand every `${...}` in `text`.
fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in `{text}`"))?;
        let reference = &after[..end];
        out.push_str(&resolve(reference, lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(reference: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let unset = |name: &str| format!("environment variable `{name}` is not set");
    if let Some(name) = reference.strip_prefix("env:") {
        return lookup(name).ok_or_else(|| unset(name));
    }
    if reference == "userHome" {
        return lookup("HOME").ok_or_else(|| unset("HOME"));
    }
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    if !is_name(name) {
        return Err(format!(
            "`${{{reference}}}` is not supported; use `${{env:NAME}}`, `${{NAME}}` or `${{NAME:-default}}`"
        ));
    }
    match (lookup(name), default) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) if name == "workspaceFolder" => Err(
            "`${workspaceFolder}` is an editor variable; write the directory instead".to_owned(),
        ),
        (None, None) => Err(unset(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn claude_desktop_cursor_and_vs_code_files_parse() {
        let claude = r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"], "env": {"A": "1"}}}, "globalShortcut": "x"}"#;
        let config = ServersConfig::from_json(claude).unwrap();
        let ServerConfig::Stdio(fs) = config.server("fs").unwrap() else {
            panic!("stdio expected")
        };
        assert_eq!(fs.args, ["-y", "server-filesystem", "/tmp"]);
        assert_eq!(fs.env["A"], "1");

        let vscode = r#"{"inputs": [], "servers": {"gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}}, "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}"#;
        let config = ServersConfig::from_json(vscode).unwrap();
        let ServerConfig::Remote(gh) = config.server("gh").unwrap().expanded(env).unwrap() else {
            panic!("remote expected")
        };
        assert_eq!(gh.headers["Authorization"], "Bearer t0k");
        assert_eq!(gh.transport, RemoteTransport::StreamableHttp);
        let ServerConfig::Remote(old) = config.server("old").unwrap() else {
            panic!("remote expected")
        };
        assert_eq!(old.transport, RemoteTransport::Sse);
    }

    #[test]
    fn an_http_entry_names_its_oauth_client_and_its_variables_expand() {
        let file = r#"{"mcpServers": {"m2m": {"url": "https://mcp.example.com/mcp",
            "oauth": {"grant": "client_credentials", "clientId": "agent",
                      "clientSecret": "${env:TOKEN}", "clientKeyFile": "${userHome}/key.pem",
                      "scope": "mcp:read", "somethingElse": 1}}}}"#;
        let config = ServersConfig::from_json(file).unwrap();
        let ServerConfig::Remote(m2m) = config.server("m2m").unwrap().expanded(env).unwrap() else {
            panic!("remote expected")
        };
        let oauth = m2m.oauth.unwrap();
        assert_eq!(oauth.grant.as_deref(), Some("client_credentials"));
        assert_eq!(oauth.client_id.as_deref(), Some("agent"));
        assert_eq!(oauth.client_secret.as_deref(), Some("t0k"));
        assert_eq!(
            oauth.client_key_file,
            Some(PathBuf::from("/home/u/key.pem"))
        );
        assert_eq!(oauth.scope.as_deref(), Some("mcp:read"));

        let unset = r#"{"mcpServers": {"m": {"url": "https://x/mcp", "oauth": {"clientSecret": "${env:NOPE}"}}}}"#;
        let e = ServersConfig::from_json(unset)
            .unwrap()
            .server("m")
            .unwrap()
            .expanded_for("m", env)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "server `m`, `oauth.clientSecret`: environment variable `NOPE` is not set"
        );
    }

    #[test]
    fn errors_name_the_server_and_the_field() {
        let err = |text: &str| ServersConfig::from_json(text).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}"#),
            "server `a`: `args[1]`: invalid type: integer `3`, expected a string"
        );
        assert_eq!(
            err(r#"{"mcpServers": {"b": {"args": []}}}"#),
            "server `b`: needs `command` (stdio) or `url` (HTTP)"
        );
        assert!(
            err(r#"{"mcpServers": {"c": {"type": "ws", "url": "x"}}}"#).contains("`type` is `ws`")
        );
        assert!(err(r#"{"mcpServers": {"d": {"command": "x", "url": "y"}}}"#).contains("both"));
        assert_eq!(err(r#"{"other": {}}"#), ConfigError::NoServers.to_string());
        assert!(err("{nope").starts_with("not valid JSON"));

        let config = ServersConfig::from_json(
            r#"{"mcpServers": {"on": {"command": "x"}, "off": {"command": "y", "disabled": true}}}"#,
        )
        .unwrap();
        assert_eq!(
            config.server("nope").unwrap_err().to_string(),
            "no server named `nope`; the file has: off, on"
        );
        assert!(matches!(
            config.server("off"),
            Err(ConfigError::Disabled(_))
        ));
        assert!(config.is_disabled("off"));
    }

    #[test]
    fn the_three_variable_forms_expand_and_an_unset_one_is_named() {
        let expand_env = |s: &str| expand(s, &env);
        assert_eq!(expand_env("a ${env:TOKEN} b").unwrap(), "a t0k b");
        assert_eq!(expand_env("${TOKEN}/${MISSING:-d}").unwrap(), "t0k/d");
        assert_eq!(expand_env("${userHome}/x").unwrap(), "/home/u/x");
        assert_eq!(expand_env("no refs $HOME").unwrap(), "no refs $HOME");
        assert!(
            expand_env("${input:key}")
                .unwrap_err()
                .contains("not supported")
        );
        assert!(expand_env("${open").unwrap_err().contains("closing"));

        let config = ServersConfig::from_json(
            r#"{"mcpServers": {"s": {"command": "run", "env": {"KEY": "${env:NOPE}"}}}}"#,
        )
        .unwrap();
        let e = config
            .server("s")
            .unwrap()
            .expanded_for("s", env)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "server `s`, `env.KEY`: environment variable `NOPE` is not set"
        );

        // What no file sets survives the expansion.
        let stdio = StdioServer {
            command: "${TOKEN}".to_owned(),
            env_clear: true,
            ..StdioServer::default()
        };
        let ServerConfig::Stdio(out) = ServerConfig::Stdio(stdio).expanded(env).unwrap() else {
            panic!("stdio");
        };
        assert!(out.env_clear && out.command == "t0k", "{out:?}");
    }
}
