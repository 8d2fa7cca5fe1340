//! The server under test: started from a command line, sampled through `/proc`, stopped.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::HostileArgs;
use super::raw::Rows;
use crate::common::proc_status_kib;

/// A running server process.
pub struct Server {
    child: tokio::process::Child,
    /// Its pid (the shell `exec`s the command, so this is the server itself).
    pub pid: u32,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl Server {
    /// Pick a free port and start `args.server` on it with `sh -c`, in a process group of
    /// its own, under `ulimit -n` when asked, its output going to `args.server_log`. The
    /// port is also in the environment as `PORT`. A simple command is `exec`ed so that the
    /// pid sampled is the server's; a compound one must `exec` the server itself.
    pub async fn start(args: &HostileArgs) -> Result<Server, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        let command = args.server.replace("{port}", &port.to_string());
        // `exec` makes the shell's pid the server's, for the /proc samples.
        let compound = ["exec ", ";", "&", "|", "="]
            .iter()
            .any(|s| command.contains(s));
        let command = if compound {
            command
        } else {
            format!("exec {command}")
        };
        let script = match args.nofile {
            Some(n) => format!("ulimit -n {n} || exit 97; {command}"),
            None => command,
        };
        let log = std::fs::File::create(&args.server_log)
            .map_err(|e| format!("cannot create {}: {e}", args.server_log.display()))?;
        let log2 = log
            .try_clone()
            .map_err(|e| format!("cannot share the log file: {e}"))?;
        let child = tokio::process::Command::new("sh")
            .args(["-c", &script])
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{script}`: {e}"))?;
        let pid = child
            .id()
            .ok_or_else(|| "the server exited at once".to_owned())?;
        eprintln!("hostile: started `{script}` (pid {pid})");
        let addr = format!("127.0.0.1:{port}");
        let url = format!("http://{addr}{}", args.path);
        Ok(Server {
            child,
            pid,
            addr,
            url,
        })
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM the process group, then SIGKILL it after 3 s.
    pub async fn stop(&mut self) {
        let group = self.pid as libc::pid_t;
        #[allow(unsafe_code)]
        // SAFETY: kill only sends a signal to the group this program created.
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(3), self.child.wait())
            .await
            .is_err()
        {
            #[allow(unsafe_code)]
            // SAFETY: as above.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
            let _ = tokio::time::timeout(Duration::from_secs(3), self.child.wait()).await;
        }
    }
}

/// How many lines of the server's log contain `needle`.
pub fn count_in_log(path: &Path, needle: &str) -> usize {
    std::fs::read(path)
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter(|l| l.contains(needle))
                .count()
        })
        .unwrap_or(0)
}

/// RSS (KiB) and fd figures of the server.
#[derive(Debug, Default, Clone)]
pub struct Mem {
    /// First sample.
    pub rss_start: u64,
    /// Highest sample.
    pub rss_peak: u64,
    /// Latest sample.
    pub rss_now: u64,
    /// Open fds at the first sample.
    pub fds_start: usize,
    /// Most open fds seen.
    pub fds_peak: usize,
    /// Open fds at the latest sample.
    pub fds_now: usize,
    /// Samples taken.
    pub samples: u64,
}

impl Mem {
    /// The table rows.
    pub fn rows(&self) -> Rows {
        let mb = |kib: u64| format!("{:.1} MB", kib as f64 * 1024.0 / 1e6);
        let mut rows = Rows::default();
        rows.push(
            "server RSS start → peak → end",
            format!(
                "{} → {} → {}",
                mb(self.rss_start),
                mb(self.rss_peak),
                mb(self.rss_now)
            ),
        );
        rows.push(
            "server fds start → peak → end",
            format!("{} → {} → {}", self.fds_start, self.fds_peak, self.fds_now),
        );
        rows
    }
}

/// Samples the server's VmRSS and fd count every 100 ms until finished.
pub struct Sampler {
    mem: Arc<Mutex<Mem>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Start sampling `pid`.
    pub fn spawn(pid: u32) -> Sampler {
        let mem = Arc::new(Mutex::new(Mem::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (mem2, stop2) = (mem.clone(), stop.clone());
        let task = tokio::spawn(async move {
            while !stop2.load(Ordering::Relaxed) {
                let rss = proc_status_kib(Some(pid), "VmRSS");
                let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|d| d.count())
                    .ok();
                if let (Some(rss), Some(fds), Ok(mut m)) = (rss, fds, mem2.lock()) {
                    if m.samples == 0 {
                        m.rss_start = rss;
                        m.fds_start = fds;
                    }
                    m.samples += 1;
                    m.rss_peak = m.rss_peak.max(rss);
                    m.fds_peak = m.fds_peak.max(fds);
                    m.rss_now = rss;
                    m.fds_now = fds;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Sampler { mem, stop, task }
    }

    /// The figures so far.
    pub fn snapshot(&self) -> Mem {
        self.mem.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Stop sampling and return the figures.
    pub async fn finish(self) -> Mem {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.task).await;
        self.mem.lock().map(|m| m.clone()).unwrap_or_default()
    }
}
