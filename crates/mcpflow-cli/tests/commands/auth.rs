//! OAuth in the `mcpflow` command: the browser step against a local authorization
//! server, the token cache across runs, refresh, `auth login|logout|list`, the
//! `--auth-timeout` bound, `host` and `call --config` on the same cache, `serve --http`
//! as a protected resource, and tokens never shown (even at `RUST_LOG=trace`).

#![allow(clippy::unwrap_used)]

use crate::common;
#[path = "../../../mcpflow/tests/common/oauth_as.rs"]
mod oauth_as;
#[path = "auth/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{HttpServe, Run, mcpflow_with};
use server::{M2M_CREDENTIALS, MARK, Servers, WORKLOAD_TOKEN};

/// A fresh cache directory and browser scripts for one test.
struct Home {
    dir: PathBuf,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = std::env::temp_dir().join(format!("mcpflow-auth-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Home { dir }
    }

    fn cache(&self) -> PathBuf {
        self.dir.join("cache")
    }

    /// A `$BROWSER` running `body` (`$1` is the URL).
    fn browser(&self, name: &str, body: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path.display().to_string()
    }

    /// A browser that visits the URL and follows the redirect to the loopback listener.
    fn visiting_browser(&self) -> String {
        self.browser(
            "visit.sh",
            "exec curl -sS -L --max-time 10 -o /dev/null \"$1\"",
        )
    }

    fn run(&self, args: &[&str], browser: &str) -> Run {
        let cache = self.cache().display().to_string();
        let run = mcpflow_with(
            args,
            None,
            &[
                ("MCPFLOW_AUTH_DIR", cache.as_str()),
                ("BROWSER", browser),
                ("RUST_LOG", "trace"),
            ],
        );
        for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains(MARK),
                "a token shows on {name} of `mcpflow {}`:\n{}",
                args.join(" "),
                run.describe()
            );
        }
        run
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn cached_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn the_browser_step_runs_once_then_the_cache_and_refresh_serve_until_logout() {
    let servers = Servers::start();
    let home = Home::new("cache");
    let browser = home.visiting_browser();
    let url = servers.mcp();
    let inspect = ["inspect", "--url", url.as_str(), "--auth-timeout", "15"];

    let first = home.run(&inspect, &browser);
    assert_eq!(first.code, 0, "first run: {}", first.describe());
    assert!(
        first.stdout.contains("guarded_tool"),
        "{}",
        first.describe()
    );
    assert!(
        first.stderr.contains("/authorize?"),
        "the URL is printed too: {}",
        first.describe()
    );
    assert_eq!(servers.with(|s| s.authorize), 1);
    assert!(
        first.stderr.contains("TRACE"),
        "the logs are at trace level"
    );

    // The tokens are in the cache file, readable by its owner only.
    let files = cached_files(&home.cache());
    assert_eq!(files.len(), 1, "{files:?}");
    let stored = std::fs::read_to_string(&files[0]).unwrap();
    assert!(stored.contains(MARK), "the cache holds the tokens");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let listed = home.run(&["auth", "list"], &browser);
    assert_eq!(listed.code, 0, "{}", listed.describe());
    assert!(listed.stdout.contains(&url), "{}", listed.describe());

    // A browser that fails the test if it is started.
    let no_browser = home.browser("fail.sh", "touch \"$0.started\"");
    let grants = servers.with(|s| s.grants.len());
    let second = home.run(&inspect, &no_browser);
    assert_eq!(second.code, 0, "second run: {}", second.describe());
    assert_eq!(servers.with(|s| s.authorize), 1, "no new authorization");
    assert_eq!(servers.with(|s| s.grants.len()), grants, "no token request");
    assert!(!Path::new(&format!("{no_browser}.started")).exists());

    // The access token expires: the refresh token gets a new one, without the browser.
    servers.with(|s| s.tokens.clear());
    let third = home.run(&inspect, &no_browser);
    assert_eq!(third.code, 0, "after expiry: {}", third.describe());
    assert_eq!(
        servers.with(|s| s.authorize),
        1,
        "refreshed, not authorized"
    );
    assert_eq!(
        servers.with(|s| s.grants.last().cloned()),
        Some("refresh_token".to_owned())
    );

    let out = home.run(&["auth", "logout", &url], &browser);
    assert_eq!(out.code, 0, "{}", out.describe());
    let listed = home.run(&["auth", "list", "--json"], &browser);
    assert_eq!(listed.json()["servers"], serde_json::json!([]));

    let fourth = home.run(&inspect, &browser);
    assert_eq!(fourth.code, 0, "after logout: {}", fourth.describe());
    assert_eq!(servers.with(|s| s.authorize), 2, "logout forces the flow");
}

#[test]
fn auth_login_authorizes_without_a_verb() {
    let servers = Servers::start();
    let home = Home::new("login");
    let url = servers.mcp();
    let login = home.run(
        &[
            "auth",
            "login",
            &url,
            "--auth-timeout",
            "15",
            "--scope",
            "tools:guarded",
        ],
        &home.visiting_browser(),
    );
    assert_eq!(login.code, 0, "{}", login.describe());
    assert!(login.stdout.contains("authorized"), "{}", login.describe());
    assert_eq!(servers.with(|s| s.authorize), 1);
    assert_eq!(
        servers.with(|s| s.scope.clone()).as_deref(),
        Some("tools:guarded"),
        "--scope replaces the server's choice"
    );
    let ping = home.run(&["ping", "--url", &url], "false");
    assert_eq!(ping.code, 0, "{}", ping.describe());
    assert_eq!(servers.with(|s| s.authorize), 1);
}

#[test]
fn a_browser_that_never_comes_back_exits_3_at_the_auth_timeout() {
    let servers = Servers::start();
    let home = Home::new("timeout");
    let silent = home.browser("silent.sh", "exit 0");
    let url = servers.mcp();
    let run = home.run(
        &["ping", "--url", &url, "--auth-timeout", "1", "--json"],
        &silent,
    );
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.elapsed < Duration::from_secs(10), "{}", run.describe());
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("authoriz")
            && message.contains("1s")
            && message.contains("--auth-timeout"),
        "the message names the wait: {message}"
    );
    // The registration may be kept; no tokens are.
    let listed = home.run(&["auth", "list", "--json"], &silent);
    assert_eq!(listed.json()["servers"], serde_json::json!([]));
}

#[test]
fn no_browser_prints_the_url_only() {
    let servers = Servers::start();
    let home = Home::new("nobrowser");
    let marker = home.browser("marker.sh", "touch \"$0.started\"");
    let url = servers.mcp();
    let run = home.run(
        &["ping", "--url", &url, "--auth-timeout", "1", "--no-browser"],
        &marker,
    );
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.stderr.contains("/authorize?"), "{}", run.describe());
    assert!(!Path::new(&format!("{marker}.started")).exists());
}

#[test]
fn a_given_token_turns_oauth_off() {
    let servers = Servers::start();
    let home = Home::new("bearer");
    let url = servers.mcp();
    let run = mcpflow_with(
        &[
            "ping",
            "--url",
            &url,
            "--bearer-env",
            "TOKEN",
            "--scope",
            "read",
        ],
        None,
        &[("TOKEN", "abc")],
    );
    assert_eq!(run.code, 2, "{}", run.describe());
    // Without OAuth, the 401 is the answer.
    let marker = home.browser("marker.sh", "touch \"$0.started\"");
    let run = home.run(
        &["ping", "--url", &url, "-H", "Authorization: Bearer abc"],
        &marker,
    );
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.stderr.contains("401"), "{}", run.describe());
    assert!(!Path::new(&format!("{marker}.started")).exists());
    assert_eq!(servers.with(|s| s.authorize), 0);
}

/// An `mcpServers` file in `home` whose one server, `remote`, is at `url`.
fn servers_file(home: &Home, url: &str) -> String {
    let path = home.dir.join("servers.json");
    let text = serde_json::json!({"mcpServers": {"remote": {"url": url}}}).to_string();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn host_and_call_by_catalog_name_share_the_flow_and_cache_of_url() {
    let servers = Servers::start();
    let home = Home::new("host");
    let url = servers.mcp();
    let file = servers_file(&home, &url);

    let host = home.run(
        &["host", "--config", &file, "--json"],
        &home.visiting_browser(),
    );
    assert_eq!(host.code, 0, "{}", host.describe());
    let out = host.json();
    assert_eq!(out["servers"]["remote"]["state"], "ready", "{out}");
    assert_eq!(out["tools"][0]["name"], "remote__guarded_tool", "{out}");
    assert_eq!(servers.with(|s| s.authorize), 1);
    assert_eq!(
        cached_files(&home.cache()).len(),
        1,
        "the tokens are cached"
    );

    // The cache serves `call` through the host and `--url` alike: no browser again.
    let no_browser = home.browser("fail.sh", "touch \"$0.started\"");
    let call = home.run(
        &["call", "--config", &file, "remote__guarded_tool", "--json"],
        &no_browser,
    );
    assert_eq!(call.code, 0, "{}", call.describe());
    assert_eq!(
        call.json()["result"]["content"][0]["text"],
        "guarded result"
    );
    let ping = home.run(&["ping", "--url", &url], &no_browser);
    assert_eq!(ping.code, 0, "{}", ping.describe());
    assert_eq!(servers.with(|s| s.authorize), 1, "no new authorization");
    assert!(!Path::new(&format!("{no_browser}.started")).exists());
}

#[test]
fn a_host_with_no_one_to_sign_in_names_auth_login_in_the_health() {
    let servers = Servers::start();
    let home = Home::new("unattended");
    let url = servers.mcp();
    let file = servers_file(&home, &url);
    let advice = format!("needs authorization: run `mcpflow auth login {url}`");

    // No terminal (stderr is a pipe) and no `$BROWSER`: no one to sign in.
    let run = home.run(&["host", "--config", &file, "--json"], "");
    assert_eq!(run.code, 3, "{}", run.describe());
    let detail = run.json()["servers"]["remote"]["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains(&advice), "{detail}");
    let run = home.run(&["host", "--config", &file], "");
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.stderr.contains(&advice), "{}", run.describe());
    assert_eq!(servers.with(|s| s.authorize), 0, "no authorization started");
    assert!(
        cached_files(&home.cache()).is_empty(),
        "nothing cached, not even the registration"
    );

    // Signed in once, the host runs unattended on the cached tokens.
    let login = home.run(
        &["auth", "login", &url, "--auth-timeout", "15"],
        &home.visiting_browser(),
    );
    assert_eq!(login.code, 0, "{}", login.describe());
    let run = home.run(&["host", "--config", &file], "");
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.stdout.contains("remote: ready"), "{}", run.describe());
    assert_eq!(servers.with(|s| s.authorize), 1);
}

/// Field defect 3: a machine client gets its token with the client-credentials grant,
/// named by flags or by its `mcpServers` entry, and never starts a browser.
#[test]
fn client_credentials_need_no_browser_from_flags_or_the_servers_file() {
    let servers = Servers::start();
    let home = Home::new("m2m");
    let url = servers.mcp();
    let marker = home.browser("marker.sh", "touch \"$0.started\"");
    let (id, secret) = M2M_CREDENTIALS.split_once(':').unwrap();
    let cache = home.cache().display().to_string();
    let env = [
        ("MCPFLOW_AUTH_DIR", cache.as_str()),
        ("BROWSER", marker.as_str()),
        ("M2M", secret),
    ];
    let run = mcpflow_with(
        &[
            "call",
            "guarded_tool",
            "--url",
            &url,
            "--grant",
            "client-credentials",
            "--client-id",
            id,
            "--client-secret-env",
            "M2M",
        ],
        None,
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.stdout.contains("guarded result"), "{}", run.describe());
    assert!(!run.stdout.contains(MARK) && !run.stderr.contains(MARK));
    assert_eq!(servers.with(|s| s.grants.clone()), ["client_credentials"]);

    // From the file: `oauth` names the grant and the client, the secret a variable.
    let _ = std::fs::remove_dir_all(home.cache());
    let path = home.dir.join("m2m.json");
    let entry = serde_json::json!({"mcpServers": {"remote": {"url": url, "oauth": {
        "grant": "client_credentials", "clientId": id, "clientSecret": "${env:M2M}"}}}});
    std::fs::write(&path, entry.to_string()).unwrap();
    let file = path.display().to_string();
    let run = mcpflow_with(
        &["call", "--config", &file, "remote__guarded_tool"],
        None,
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.describe());
    let run = mcpflow_with(&["host", "--config", &file, "--json"], None, &env);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert_eq!(run.json()["servers"]["remote"]["state"], "ready");
    assert_eq!(servers.with(|s| s.authorize), 0, "no browser step");
    assert!(!Path::new(&format!("{marker}.started")).exists());
}

/// A workload signs in with its platform's identity token (a file, read for each
/// grant) as a JWT bearer grant: no browser, no client secret.
#[test]
fn workload_identity_reads_its_token_file() {
    let servers = Servers::start();
    let home = Home::new("wif");
    let url = servers.mcp();
    let file = home.dir.join("identity-token");
    std::fs::write(&file, format!("{WORKLOAD_TOKEN}\n")).unwrap();
    let marker = home.browser("marker.sh", "touch \"$0.started\"");
    let run = home.run(
        &[
            "call",
            "guarded_tool",
            "--url",
            &url,
            "--grant",
            "workload-identity",
            "--identity-token-file",
            file.to_str().unwrap(),
        ],
        &marker,
    );
    assert_eq!(run.code, 0, "{}", run.describe());
    assert_eq!(
        servers.with(|s| s.grants.clone()),
        ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    );
    assert!(!Path::new(&format!("{marker}.started")).exists());
}

/// Field defect 4: `auth login` checks cached tokens by using them: accepted ones stay,
/// and ones the server no longer takes are replaced by a new sign-in.
#[test]
fn auth_login_checks_cached_tokens_and_replaces_dead_ones() {
    let servers = Servers::start();
    let home = Home::new("relogin");
    let url = servers.mcp();
    let login = ["auth", "login", url.as_str(), "--auth-timeout", "15"];
    let first = home.run(&login, &home.visiting_browser());
    assert_eq!(first.code, 0, "{}", first.describe());
    assert_eq!(servers.with(|s| s.authorize), 1);

    let again = home.run(&login, &home.visiting_browser());
    assert_eq!(again.code, 0, "{}", again.describe());
    assert!(again.stdout.contains("accepted"), "{}", again.describe());
    assert_eq!(servers.with(|s| s.authorize), 1, "valid tokens are kept");

    // The authorization server forgets every grant: the cached tokens are dead.
    servers.with(|s| {
        s.tokens.clear();
        s.refresh.clear();
    });
    let renewed = home.run(&login, &home.visiting_browser());
    assert_eq!(renewed.code, 0, "{}", renewed.describe());
    assert!(renewed.stdout.contains("renewed"), "{}", renewed.describe());
    assert_eq!(servers.with(|s| s.authorize), 2, "a new sign-in");
    let ping = home.run(&["ping", "--url", &url], "false");
    assert_eq!(ping.code, 0, "{}", ping.describe());
}

/// Field defect 5: with no browser to open and no terminal, a verb fails at once,
/// naming the command that signs in, instead of waiting out `--auth-timeout`.
#[test]
fn no_browser_and_no_terminal_fail_at_once() {
    let servers = Servers::start();
    let home = Home::new("nobody");
    let url = servers.mcp();
    let run = home.run(
        &["ping", "--url", &url, "--auth-timeout", "300"],
        "/nonexistent/browser",
    );
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(
        run.stderr.contains("mcpflow auth login") && run.stderr.contains("no browser"),
        "{}",
        run.describe()
    );
}

#[test]
fn serve_http_protected_by_introspection_admits_only_tokens_for_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let issuer = runtime.block_on(oauth_as::AuthServer::start());
    let introspect = issuer.url("/introspect").to_string();
    let secret = "introspection-secret";
    let serve = HttpServe::start_with(
        &[
            "--auth-issuer",
            &issuer.issuer,
            "--auth-introspect",
            &introspect,
            "--auth-scope",
            "mcp:read",
            "--auth-client-id",
            "mcp-server",
            "--auth-client-secret-env",
            "INTROSPECTION_SECRET",
        ],
        &[("INTROSPECTION_SECRET", secret), ("RUST_LOG", "trace")],
    );
    let url = serve.url.clone();
    let mut shown = Vec::new();
    let mut ping = |token: &str| {
        let run = mcpflow_with(
            &["ping", "--url", &url, "--bearer-env", "TOKEN", "--json"],
            None,
            &[("TOKEN", token), ("RUST_LOG", "trace")],
        );
        shown.push(format!("{}{}", run.stdout, run.stderr));
        run
    };

    let good = issuer.issue("mcp:read", Some(&url));
    let run = ping(&good);
    assert_eq!(run.code, 0, "a token for it: {}", run.describe());
    let other = issuer.issue("mcp:read", Some("http://127.0.0.1:9/mcp"));
    let run = ping(&other);
    assert_eq!(
        run.code,
        3,
        "a token for another resource: {}",
        run.describe()
    );
    assert!(run.stderr.contains("401"), "{}", run.describe());
    let narrow = issuer.issue("mcp:other", Some(&url));
    let run = ping(&narrow);
    assert_eq!(run.code, 3, "a token without the scope: {}", run.describe());
    assert!(run.stderr.contains("403"), "{}", run.describe());

    // A client running the whole flow: the served metadata, the browser step, then
    // introspection of the token issued for this server.
    let home = Home::new("serve");
    let flow = home.run(
        &["ping", "--url", &url, "--auth-timeout", "15"],
        &home.visiting_browser(),
    );
    assert_eq!(flow.code, 0, "{}", flow.describe());
    assert_eq!(issuer.authorizations(), 1);
    assert_eq!(issuer.token_resources().last(), Some(&Some(url.clone())));
    assert!(issuer.introspections() >= 4);
    shown.push(format!("{}{}", flow.stdout, flow.stderr));
    let files = cached_files(&home.cache());
    assert_eq!(files.len(), 1, "{files:?}");
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let flowed = cache["tokens"][&url]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();

    // No token and no secret shows, in the clients' output or the server's trace log.
    let log = serve.stderr.lock().unwrap().clone();
    assert!(log.contains("TRACE"), "the server logs at trace level");
    for hidden in [good.as_str(), &other, &narrow, &flowed, secret] {
        assert!(
            !log.contains(hidden),
            "`{hidden}` in the server's log:\n{log}"
        );
        for text in &shown {
            assert!(!text.contains(hidden), "`{hidden}` shown:\n{text}");
        }
    }
}
