//! Ctrl-C for the verbs that talk to a server. The first SIGINT asks the running verb
//! to stop: it drops the request in flight (which sends `notifications/cancelled`),
//! closes the connection (HTTP `DELETE`, or the child's stdin closed) within a bounded
//! time and exits 130. A second SIGINT exits at once, killing a child server first.

use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::failure::EXIT_INTERRUPTED;

/// The process group of the child server, for the second Ctrl-C (0: none).
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// Remember the child server's process id (its process group has the same id).
pub fn set_child(pid: Option<u32>) {
    let pid = pid.and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    CHILD_GROUP.store(pid, Ordering::Relaxed);
}

/// Send `signal` to the child server's process group, if there is one.
pub fn signal_child(signal: libc::c_int) {
    let pid = CHILD_GROUP.load(Ordering::Relaxed);
    if pid > 0 {
        // A negative pid names the process group the child was started in.
        #[allow(unsafe_code)]
        // SAFETY: kill(2) takes plain integers and has no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// Becomes true on the first Ctrl-C.
#[derive(Debug, Clone)]
pub struct Interrupt {
    pressed: watch::Receiver<bool>,
}

impl Interrupt {
    /// Take over SIGINT for the rest of the process. `quiet`: print nothing (`--json`).
    pub fn install(quiet: bool) -> Interrupt {
        let (tx, pressed) = watch::channel(false);
        // Registered here, not in the task: a SIGINT that comes before the task first
        // runs is then caught too, instead of killing the process.
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(sigint) => sigint,
            Err(e) => {
                tracing::warn!(error = %e, "Ctrl-C cannot be taken over; it ends the process");
                return Interrupt { pressed };
            }
        };
        tokio::spawn(async move {
            let mut presses = 0u32;
            while sigint.recv().await.is_some() {
                presses += 1;
                if presses == 1 {
                    if !quiet {
                        eprintln!(
                            "mcpflow: interrupted; cancelling the request (Ctrl-C again to exit at once)"
                        );
                    }
                    let _ = tx.send(true);
                } else {
                    signal_child(libc::SIGKILL);
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
            }
        });
        Interrupt { pressed }
    }

    /// Resolves on the first Ctrl-C.
    pub async fn pressed(&self) {
        let mut pressed = self.pressed.clone();
        if pressed.wait_for(|p| *p).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
