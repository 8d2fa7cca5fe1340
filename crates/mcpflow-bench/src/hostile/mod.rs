//! `mcpflow-bench hostile <attack>`: hostile traffic against a streamable HTTP MCP server.
//!
//! The program starts the server under test itself from `--server` (a shell command line in
//! which `{port}` becomes a free port), optionally under `ulimit -n` (`--nofile`), waits
//! until it answers `initialize`, then runs one attack while two things go on beside it:
//!
//! - a sampler reads the server's `VmRSS` and its open fd count from `/proc/PID` every
//!   100 ms (start, peak, end);
//! - a probe runs a full MCP session over plain HTTP every 0.5 s (initialize,
//!   notifications/initialized, ping, DELETE; 5 s at most each, a fresh connection per
//!   request) and reports how many worked, their latency and the longest outage.
//!
//! Every wait is bounded, the server is killed at the end, and one markdown table sums the
//! run up. The attacks are described on [`Attack`]'s variants.
//!
//! Three modes are honest load rather than attacks, for before/after comparisons: `load`,
//! `calls` and `soak` (see [`load`], [`calls`] and [`soak`]). They run with the sampler
//! but without the probe.
//!
//! ```sh
//! mcpflow-bench hostile --server 'mcpflow serve everything --http 127.0.0.1:{port}' stalled-upload
//! mcpflow-bench hostile --server '...' --nofile 1024 slowloris --connections 1100 --duration 150
//! mcpflow-bench hostile --server 'PORT={port} exec node dist/index.js streamableHttp' \
//!     never-read --big echo --big-kib 3072
//! mcpflow-bench hostile --server 'mcpflow serve everything --http 127.0.0.1:{port}' \
//!     load --clients 1000 --calls 50
//! mcpflow-bench hostile --server '...' calls --connections 10 --calls 1000000 --idle 60
//! mcpflow-bench hostile --server '...' soak --clients 20 --rate 5 --duration 300
//! ```

mod calls;
mod conn;
pub mod fleet;
mod load;
mod mcp;
mod never_read;
mod raw;
mod server;
mod sessions;
mod slowloris;
mod soak;
mod upload;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};

pub use raw::Rows;

/// Options every attack shares, then the attack.
#[derive(Debug, Args)]
pub struct HostileArgs {
    /// The server's command line, run with `sh -c`; `{port}` becomes a free port and the
    /// endpoint is `http://127.0.0.1:{port}{path}`.
    #[arg(
        long,
        global = true,
        default_value = "mcpflow serve everything --http 127.0.0.1:{port}"
    )]
    server: String,
    /// The endpoint's path.
    #[arg(long, global = true, default_value = "/mcp")]
    path: String,
    /// Start the server under `ulimit -n NOFILE`.
    #[arg(long, global = true)]
    nofile: Option<u64>,
    /// Where the server's stdout and stderr go.
    #[arg(long, global = true, default_value = "/tmp/mcpflow-hostile-server.log")]
    server_log: PathBuf,
    /// Seconds to wait for the server to answer `initialize` after it starts.
    #[arg(long, global = true, default_value_t = 30)]
    startup_timeout: u64,
    /// Seconds the probe and the sampler go on after the attack has ended.
    #[arg(long, global = true, default_value_t = 3)]
    settle: u64,
    /// The attack.
    #[command(subcommand)]
    attack: Attack,
}

/// The attacks. Durations are in seconds, sizes as named.
#[derive(Debug, Subcommand)]
pub enum Attack {
    /// POSTs that declare `Content-Length: 100 MB`, send part of the body fast, then stall
    /// with the connection open. A server that checks the declared length answers 413 at
    /// once; one that buffers bodies holds `connections × sent` bytes.
    StalledUpload {
        /// Attacking connections.
        #[arg(long, default_value_t = 40)]
        connections: usize,
        /// MiB of body each connection sends before it stalls.
        #[arg(long, default_value_t = 15)]
        send_mib: u64,
        /// The declared Content-Length, in bytes.
        #[arg(long, default_value_t = 100_000_000)]
        declared: u64,
        /// Seconds to stall after the body part is sent.
        #[arg(long, default_value_t = 20)]
        duration: u64,
    },
    /// Slowloris: connections that send request headers one byte per second and never
    /// finish them. A server without a header-read timeout keeps every one of them open,
    /// and under a low fd limit stops accepting anyone else.
    Slowloris {
        /// Attacking connections.
        #[arg(long, default_value_t = 1100)]
        connections: usize,
        /// Seconds the attack lasts.
        #[arg(long, default_value_t = 150)]
        duration: u64,
    },
    /// Sessions opened (initialize + notifications/initialized) and never deleted, as fast
    /// as possible; then a fresh client's initialize shows whether the server still lets
    /// new clients in.
    AbandonedSessions {
        /// Sessions to open.
        #[arg(long, default_value_t = 20_000)]
        sessions: usize,
        /// Sessions opened at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
    },
    /// Connections that ask for a large answer (Accept: text/event-stream) and never read
    /// it, with a small receive buffer, so the answer stays queued in the server.
    NeverRead {
        /// Attacking connections.
        #[arg(long, default_value_t = 40)]
        connections: usize,
        /// Seconds the answers stay unread.
        #[arg(long, default_value_t = 30)]
        duration: u64,
        /// What to ask for: `template` (resources/read of `test://template/{id}/data`, which
        /// mcpflow's everything server echoes about three times) or `echo` (tools/call of
        /// `echo` with a `message`, as the TypeScript everything server has).
        #[arg(long, default_value = "template")]
        big: String,
        /// KiB of the id or message.
        #[arg(long, default_value_t = 1024)]
        big_kib: usize,
        /// The attacking sockets' receive buffer (SO_RCVBUF), in bytes.
        #[arg(long, default_value_t = 16 * 1024)]
        rcvbuf: u32,
    },
    /// Honest load: N clients at once, one connection each, every one doing initialize +
    /// notifications/initialized + `calls` × tools/call of `test_simple_text` + DELETE.
    Load {
        /// Concurrent clients.
        #[arg(long, default_value_t = 100)]
        clients: usize,
        /// tools/call requests per client.
        #[arg(long, default_value_t = 50)]
        calls: usize,
    },
    /// Honest load without sessions: keep-alive connections posting tools/call of
    /// `test_simple_text` back to back, as 2026-07-28 requests or (`--era handshake`) as
    /// 2025-11-25 requests to a stateless server, with the server's RSS every `--every`
    /// calls and its RSS and CPU time after `--idle` seconds without traffic.
    Calls {
        /// Keep-alive connections, each with one request in flight.
        #[arg(long, default_value_t = 10)]
        connections: usize,
        /// Calls in all.
        #[arg(long, default_value_t = 100_000)]
        calls: u64,
        /// Calls between two RSS checkpoints.
        #[arg(long, default_value_t = 100_000)]
        every: u64,
        /// Which requests to send.
        #[arg(long, value_enum, default_value = "2026-07-28")]
        era: calls::Era,
        /// Seconds without traffic after the calls, then RSS and CPU time again.
        #[arg(long, default_value_t = 0)]
        idle: u64,
    },
    /// Honest soak: clients sending paced mixed traffic (tools, progress, logging, static
    /// and template resources, tools/list) in 50-request sessions each ended with DELETE.
    Soak {
        /// Concurrent clients.
        #[arg(long, default_value_t = 20)]
        clients: usize,
        /// Requests per second per client.
        #[arg(long, default_value_t = 5.0)]
        rate: f64,
        /// Seconds the traffic lasts.
        #[arg(long, default_value_t = 300)]
        duration: u64,
    },
}

impl Attack {
    fn name(&self) -> &'static str {
        match self {
            Attack::StalledUpload { .. } => "stalled-upload",
            Attack::Slowloris { .. } => "slowloris",
            Attack::AbandonedSessions { .. } => "abandoned-sessions",
            Attack::NeverRead { .. } => "never-read",
            Attack::Load { .. } => "load",
            Attack::Calls { .. } => "calls",
            Attack::Soak { .. } => "soak",
        }
    }
}

/// Run one attack and print its table; the exit code is 0 unless the run itself failed.
pub async fn run(args: HostileArgs) -> i32 {
    raw::raise_nofile();
    let mut server = match server::Server::start(&args).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("hostile: {e}");
            return 1;
        }
    };
    let url = server.url.clone();
    if let Err(e) = mcp::wait_ready(&url, Duration::from_secs(args.startup_timeout)).await {
        eprintln!("hostile: {e}");
        server.stop().await;
        return 1;
    }
    let sampler = server::Sampler::spawn(server.pid);
    let epoch = Instant::now() + Duration::from_secs(1);
    let honest = matches!(
        args.attack,
        Attack::Load { .. } | Attack::Soak { .. } | Attack::Calls { .. }
    );
    let probe = (!honest).then(|| mcp::Probe::spawn(url.clone(), epoch));
    tokio::time::sleep_until(epoch.into()).await;
    eprintln!("hostile: {} against {}", args.attack.name(), url);
    let rows = match &args.attack {
        Attack::StalledUpload {
            connections,
            send_mib,
            declared,
            duration,
        } => {
            let send = send_mib.saturating_mul(1024 * 1024);
            upload::run(
                &server.addr,
                &args.path,
                *connections,
                send,
                *declared,
                *duration,
            )
            .await
        }
        Attack::Slowloris {
            connections,
            duration,
        } => slowloris::run(&server.addr, &args.path, *connections, *duration).await,
        Attack::AbandonedSessions {
            sessions,
            concurrency,
        } => sessions::run(&url, *sessions, *concurrency).await,
        Attack::NeverRead {
            connections,
            duration,
            big,
            big_kib,
            rcvbuf,
        } => {
            let opts = never_read::Opts {
                connections: *connections,
                duration: *duration,
                big: big.clone(),
                big_bytes: big_kib.saturating_mul(1024),
                rcvbuf: *rcvbuf,
            };
            never_read::run(&server.addr, &url, &args.path, &opts, &sampler).await
        }
        Attack::Load { clients, calls } => load::run(&url, *clients, *calls).await,
        Attack::Calls {
            connections,
            calls,
            every,
            era,
            idle,
        } => {
            let opts = calls::Opts {
                connections: *connections,
                calls: *calls,
                every: *every,
                era: *era,
                idle: *idle,
            };
            calls::run(&url, server.pid, opts).await
        }
        Attack::Soak {
            clients,
            rate,
            duration,
        } => soak::run(&url, *clients, *rate, *duration, &sampler).await,
    };
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let probe = match probe {
        Some(probe) => Some(probe.finish().await),
        None => None,
    };
    let mem = sampler.finish().await;
    let alive = server.alive();
    server.stop().await;
    let emfile = server::count_in_log(&args.server_log, "Too many open files");

    let mut table = Rows::default();
    table.push("attack", args.attack.name());
    table.push("server", &args.server);
    table.push(
        "server fd limit",
        args.nofile
            .map_or("inherited".to_owned(), |n| n.to_string()),
    );
    table.push("server alive at the end", if alive { "yes" } else { "NO" });
    table.extend(rows);
    table.extend(mem.rows());
    if let Some(probe) = probe {
        table.extend(probe.rows());
    }
    table.push("log lines 'Too many open files'", emfile.to_string());
    println!("{}", table.markdown());
    0
}
