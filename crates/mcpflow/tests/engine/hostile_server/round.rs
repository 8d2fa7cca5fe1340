//! One round of calls and its checks, and the run's statistics.

use super::*;

/// Calls that ended `Ok` and `Err`, by kind, and those the fallback ended.
#[derive(Default, Debug)]
pub(super) struct Stats {
    pub(super) rounds: u64,
    pub(super) ok: BTreeMap<&'static str, u64>,
    pub(super) err: BTreeMap<&'static str, u64>,
    /// Errors by kind: the fallback, a JSON-RPC error sent, a result of the wrong shape.
    pub(super) fallback: u64,
    pub(super) rejected: u64,
    pub(super) codec: u64,
    /// Calls answered unmutated, and mutated but still well-formed (both checked
    /// exactly), progress callback runs.
    pub(super) unmutated: u64,
    pub(super) intact: u64,
    pub(super) progress_runs: u64,
}

impl Stats {
    pub(super) fn tally(&mut self, answer: &Answer) {
        if !answer.mutated {
            self.unmutated += 1;
        } else if intact(&answer.sent, &answer.id) {
            self.intact += 1;
        }
    }

    pub(super) fn count<T>(&mut self, kind: &'static str, result: &Result<T, SessionError>) {
        match result {
            Ok(_) => *self.ok.entry(kind).or_default() += 1,
            Err(e) => {
                *self.err.entry(kind).or_default() += 1;
                match e {
                    SessionError::Rejected { error, .. } if i64::from(error.code.0) == FALLBACK => {
                        self.fallback += 1;
                    }
                    SessionError::Rejected { .. } => self.rejected += 1,
                    _ => self.codec += 1,
                }
            }
        }
    }
}

/// The run's context, to report a failure with the seed and the messages since the
/// last good round.
pub(super) struct Run {
    pub(super) seed: u64,
    pub(super) messages: u64,
    /// The transport and the runtime, as the report names them.
    pub(super) over: String,
    pub(super) round: u64,
    pub(super) wire: Arc<Mutex<Wire>>,
    pub(super) probe: Arc<AtomicBool>,
}

impl Run {
    pub(super) fn fail(&self, what: &str) -> ! {
        let wire = lock(&self.wire);
        let missing: Vec<String> = wire
            .tally
            .missing()
            .take(10)
            .map(|(id, n, got)| {
                let carried = wire.carried_by.get(id).cloned().unwrap_or_default();
                format!(
                    "  {}: owed {n}, got {got}, last sent in {}",
                    shorten(id),
                    shorten(&carried)
                )
            })
            .collect();
        let log: Vec<String> = wire
            .log
            .iter()
            .map(|m| format!("  {}", shorten(m)))
            .collect();
        panic!(
            "seed {} over {}, round {}: {what}\n\
             problems the raw server saw: {:?}\n\
             answers owed that had not come yet:\n{}\n\
             replay: MCPFLOW_HOSTILE_SEED={} MCPFLOW_HOSTILE_MESSAGES={} cargo test -p mcpflow --test engine hostile_server::\n\
             the raw server sent, since the last good round ({} messages):\n{}",
            self.seed,
            self.over,
            self.round,
            wire.problems,
            missing.join("\n"),
            self.seed,
            self.messages,
            log.len(),
            log.join("\n"),
        );
    }

    /// Spawn `fut`, bounded; a panic in it (the library's or the bound's) fails the run
    /// with the messages.
    pub(super) async fn spawn_bounded<T: Send + 'static>(
        &self,
        what: &str,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> T {
        let label = what.to_owned();
        let task = tokio::spawn(async move { bounded(&label, fut).await });
        self.join(what, task).await
    }

    /// Join a task. One that bounds its own wait reports its own timeout (this bound is
    /// longer); one that does not (the raw server) fails here, with the messages.
    pub(super) async fn join<T>(&self, what: &str, task: tokio::task::JoinHandle<T>) -> T {
        let Ok(joined) = tokio::time::timeout(Duration::from_secs(30), task).await else {
            self.fail(&format!("timed out (30s) waiting for: {what}"));
        };
        match joined {
            Ok(value) => value,
            Err(e) => {
                let why = match e.try_into_panic() {
                    Ok(panic) => panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default(),
                    Err(e) => e.to_string(),
                };
                self.fail(&format!("{what} panicked: {why}"))
            }
        }
    }

    /// One round: start a few calls at once, check how each ended, then ping and check
    /// what the handlers saw.
    pub(super) async fn round(
        &mut self,
        client: &Client,
        rng: &mut Rng,
        seen: &Seen,
        stats: &mut Stats,
    ) {
        self.round += 1;
        let round = self.round;
        let mut calls = Vec::new();
        let mut pinged = false;
        for i in 0..=rng.below(4) {
            calls.push(match rng.below(8) {
                0..=3 => Call::Tool {
                    tag: format!("call-{round}.{i}"),
                    name: if rng.below(2) == 0 { "echo" } else { "weather" },
                    progress: (rng.below(2) == 0).then(Arc::default),
                },
                4 | 5 => Call::List {
                    tag: format!("list-{round}.{i}"),
                },
                6 if !pinged => {
                    pinged = true;
                    Call::Ping {
                        tag: format!("ping-{round}"),
                    }
                }
                _ => Call::Tools,
            });
        }
        // Counted before the flag is reset: a list change flagged after the reset is
        // handled after this count.
        let list_changed_before = seen.notes("notifications/tools/list_changed");
        {
            let mut wire = lock(&self.wire);
            wire.round = round;
            wire.list_changed_clean = false;
            wire.round_tags = calls
                .iter()
                .filter_map(|call| call.tag().map(str::to_owned))
                .collect();
        }
        let mut tasks = Vec::new();
        for call in &calls {
            let handle: ClientHandle = client.handle();
            let task = match call {
                Call::Tool {
                    tag,
                    name,
                    progress,
                } => {
                    let arguments =
                        json!({"tag": tag, "city": "Paris", "text": "hi \"there\" \u{e9}"});
                    let what = format!("call_tool {tag}");
                    let name: &'static str = name;
                    match progress {
                        None => tokio::spawn(async move {
                            Outcome::Tool(bounded(&what, handle.call_tool(name, arguments)).await)
                        }),
                        Some(progress) => {
                            let params = CallToolRequestParams::new(name)
                                .with_arguments(arguments.as_object().cloned().unwrap());
                            let seen = progress.clone();
                            let options = RequestOptions::new().on_progress(move |_update| {
                                seen.runs.fetch_add(1, Ordering::SeqCst);
                                if seen.returned.load(Ordering::SeqCst) {
                                    seen.late.fetch_add(1, Ordering::SeqCst);
                                }
                            });
                            let progress = progress.clone();
                            tokio::spawn(async move {
                                let result =
                                    bounded(&what, handle.call_tool_with(&params, options)).await;
                                progress.returned.store(true, Ordering::SeqCst);
                                Outcome::Tool(result)
                            })
                        }
                    }
                }
                Call::List { tag } => {
                    let (what, cursor) = (format!("list_tools {tag}"), tag.clone());
                    tokio::spawn(async move {
                        Outcome::List(bounded(&what, handle.list_tools(Some(cursor))).await)
                    })
                }
                Call::Ping { .. } => tokio::spawn(async move {
                    Outcome::Ping(bounded("the round's ping", handle.ping()).await)
                }),
                Call::Tools => {
                    tokio::spawn(
                        async move { Outcome::Tools(bounded("tools()", handle.tools()).await) },
                    )
                }
            };
            tasks.push(task);
        }
        for (call, task) in calls.iter().zip(tasks) {
            let what = call.tag().unwrap_or("tools()");
            let outcome = self.join(what, task).await;
            self.check(client, call, outcome, stats);
        }

        // The round is over: ping (the flag, set before the ping goes out, has the raw
        // server answer it properly once every owed answer has come), then wait for the
        // notification handlers.
        self.probe.store(true, Ordering::SeqCst);
        let handle = client.handle();
        let ping = self.spawn_bounded(
            "the ping after the round",
            async move { handle.ping().await },
        );
        if let Err(e) = ping.await {
            self.fail(&format!("the ping after the round failed: {e}"));
        }
        let handle = client.handle();
        self.spawn_bounded("the notification handlers", async move {
            handle.notifications_handled().await
        })
        .await;
        for call in &calls {
            if let Call::Tool {
                progress: Some(progress),
                ..
            } = call
            {
                let late = progress.late.load(Ordering::SeqCst);
                if late > 0 {
                    self.fail(&format!(
                        "a progress callback ran {late} times after its call returned"
                    ));
                }
            }
        }
        self.check_handlers(seen, list_changed_before);
        let problems_seen = !lock(&self.wire).problems.is_empty();
        if problems_seen {
            self.fail("the raw server saw problems");
        }
        stats.rounds += 1;
        lock(&self.wire).log.clear();
    }

    pub(super) fn check(&self, client: &Client, call: &Call, outcome: Outcome, stats: &mut Stats) {
        let answer = |tag: &str| {
            let answer = lock(&self.wire).answered.get(tag).cloned();
            answer.unwrap_or_else(|| self.fail(&format!("no answer recorded for {tag}")))
        };
        let checked = match (call, outcome) {
            (
                Call::Tool {
                    tag,
                    name,
                    progress,
                },
                Outcome::Tool(result),
            ) => {
                stats.count("call_tool", &result);
                let answer = answer(tag);
                stats.tally(&answer);
                // A loaded tool list may declare an outputSchema for the tool.
                let schema = client.tools_snapshot().is_some();
                let mut checked = check_answer(result.as_ref(), &answer, schema)
                    .map_err(|e| format!("call_tool {name} ({tag}): {e}; got {result:?}"));
                if let (Some(progress), Some(token), Ok(())) = (progress, &answer.token, &checked) {
                    let runs = progress.runs.load(Ordering::SeqCst);
                    stats.progress_runs += runs;
                    let (least, most) = lock(&self.wire)
                        .progress
                        .get(&token.to_string())
                        .copied()
                        .unwrap_or_default();
                    if !(least..=most).contains(&runs) {
                        checked = Err(format!(
                            "call_tool {tag}: the progress callback ran {runs} times, for \
                             {least} unmutated and {most} in all sent before the answer"
                        ));
                    }
                }
                checked
            }
            (Call::List { tag }, Outcome::List(result)) => {
                stats.count("list_tools", &result);
                let answer = answer(tag);
                stats.tally(&answer);
                check_answer(result.as_ref(), &answer, false)
                    .map_err(|e| format!("list_tools ({tag}): {e}; got {result:?}"))
            }
            (Call::Ping { tag }, Outcome::Ping(result)) => {
                stats.count("ping", &result);
                let result = result.as_ref().map(|()| None::<&EmptyResult>);
                let answer = answer(tag);
                stats.tally(&answer);
                check_answer_of(result, &answer, false)
                    .map_err(|e| format!("ping: {e}; got {result:?}"))
            }
            (Call::Tools, Outcome::Tools(result)) => {
                stats.count("tools", &result);
                match &result {
                    Ok(_) | Err(SessionError::Codec { .. } | SessionError::Rejected { .. }) => {
                        Ok(())
                    }
                    Err(e) => Err(format!("tools() ended with an unclear error: {e}")),
                }
            }
            _ => Err("a call ended with another call's outcome".to_owned()),
        };
        if let Err(e) = checked {
            self.fail(&e);
        }
    }

    /// The log and notification handlers saw every unmutated notification meant for
    /// them, and nothing that was never sent.
    pub(super) fn check_handlers(&self, seen: &Seen, list_changed_before: u64) {
        let mut wire = lock(&self.wire);
        let Some((clean, list_changed_clean)) = wire.at_probe.take() else {
            drop(wire);
            self.fail("the ping after the round was answered, but not by the raw server");
        };
        let notes = lock(&seen.notes).clone();
        let sent = |method: &str| wire.notes_sent.get(method).copied().unwrap_or(0);
        let clean = |method: &str| clean.get(method).copied().unwrap_or(0);
        let mut wrong = Vec::new();
        for (method, &got) in &notes {
            if got > sent(method) {
                wrong.push(format!("{got} {method} handled, {} sent", sent(method)));
            }
        }
        for method in [
            "notifications/message",
            "notifications/cancelled",
            "notifications/progress",
        ] {
            let got = notes.get(method).copied().unwrap_or(0);
            if got < clean(method) {
                wrong.push(format!(
                    "{got} {method} handled, {} unmutated sent",
                    clean(method)
                ));
            }
        }
        let logs = seen.logs.load(Ordering::SeqCst);
        let log = "notifications/message";
        if !(clean(log)..=sent(log)).contains(&logs) {
            wrong.push(format!(
                "the log handler ran {logs} times, for {} unmutated and {} in all",
                clean(log),
                sent(log)
            ));
        }
        let list_changed = "notifications/tools/list_changed";
        if list_changed_clean
            && notes.get(list_changed).copied().unwrap_or(0) == list_changed_before
        {
            wrong.push("an unmutated tools/list_changed this round was never handled".to_owned());
        }
        drop(wire);
        if !wrong.is_empty() {
            self.fail(&wrong.join("; "));
        }
    }
}
