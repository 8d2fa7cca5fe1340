//! The raw server: a `RawPeer` that answers the client's calls with mutated responses
//! and sends mutated notifications and requests of its own.

use super::*;

/// The raw server: answers `initialize`, then every request of the client.
pub(super) struct RawServer {
    pub(super) peer: RawPeer,
    pub(super) seed: u64,
    pub(super) wire: Arc<Mutex<Wire>>,
    pub(super) probe: Arc<AtomicBool>,
    /// This round's calls, held until all have come.
    pub(super) held: Vec<(String, Value)>,
    /// Progress tokens of calls read and not yet answered (with their tags), and of
    /// calls answered.
    pub(super) pending: Vec<(String, Value)>,
    pub(super) finished: Vec<Value>,
    /// The last server request sent, for cancellations to name.
    pub(super) last_request: Value,
    pub(super) requests: u64,
    pub(super) untagged: u64,
}

impl RawServer {
    pub(super) async fn run(mut self) {
        let init = self.peer.recv_until(|m| m["method"] == "initialize").await;
        let caps = &init["params"]["capabilities"];
        if !(caps["sampling"].is_object()
            && caps["elicitation"].is_object()
            && caps["roots"]["listChanged"] == true)
        {
            lock(&self.wire)
                .problems
                .push(format!("the client did not declare its callbacks: {caps}"));
        }
        self.peer
            .send(json!({"jsonrpc":"2.0","id":init["id"],"result":{
                "protocolVersion":"2025-11-25",
                "capabilities":{"tools":{"listChanged":true},
                    "resources":{"listChanged":true,"subscribe":true},
                    "prompts":{"listChanged":true},"logging":{}},
                "serverInfo":{"name":"hostile","version":"0"},
                "instructions":"Everything this server says is suspect."}}))
            .await;
        self.peer
            .recv_until(|m| m["method"] == "notifications/initialized")
            .await;
        let mut probe: Option<Value> = None;
        loop {
            let message = match self.peer.try_recv().await {
                Ok(Some(message)) => message,
                Ok(None) => return,
                Err(e) => return self.connection_failed(e),
            };
            let sent = if message.get("method").is_none() {
                self.answer_received(&message);
                Ok(())
            } else if let Some(id) = message.get("id") {
                if message["method"] == "ping" && self.probe.load(Ordering::SeqCst) {
                    probe = Some(id.clone());
                    Ok(())
                } else {
                    self.request(message).await
                }
            } else {
                let mut wire = lock(&self.wire);
                if message["method"] == "notifications/cancelled" && !wire.closing {
                    wire.problems.push(format!(
                        "the client cancelled a request it had no reason to: {message}"
                    ));
                }
                Ok(())
            };
            if let Err(e) = sent {
                return self.connection_failed(e);
            }
            // The ping after a round is answered once every owed answer has come.
            if probe.is_some() && self.settled() {
                self.probe.store(false, Ordering::SeqCst);
                {
                    let mut wire = lock(&self.wire);
                    wire.at_probe = Some((wire.notes_clean.clone(), wire.list_changed_clean));
                }
                let answer = json!({"jsonrpc":"2.0","id":probe.take(),"result":{}});
                if let Err(e) = self.send(answer, false).await {
                    return self.connection_failed(e);
                }
            }
        }
    }

    pub(super) fn connection_failed(&self, why: String) {
        let mut wire = lock(&self.wire);
        if !wire.closing {
            wire.problems
                .push(format!("the raw server's connection failed: {why}"));
        }
    }

    /// Every owed answer has come.
    pub(super) fn settled(&self) -> bool {
        lock(&self.wire).open.is_empty()
    }

    /// An answer from the client, to a server request (or a complaint about a message).
    pub(super) fn answer_received(&self, reply: &Value) {
        let mut wire = lock(&self.wire);
        wire.answers += 1;
        if !is_well_formed(reply) {
            wire.problems.push(format!("a malformed answer: {reply}"));
            return;
        }
        if reply["id"].is_null() {
            return;
        }
        let id = reply["id"].to_string();
        wire.tally.received(id.clone());
        let (owed, got) = {
            let due = wire.due.entry(id.clone()).or_default();
            due.1 += 1;
            *due
        };
        if got >= owed {
            wire.open.remove(&id);
        }
        if got > owed {
            wire.problems.push(format!(
                "id {}: owed {owed} answers, got {got}",
                shorten(&id)
            ));
        }
        let Some(expect) = wire.expect.remove(&id) else {
            return;
        };
        wire.expect_checked += 1;
        let fits = match expect {
            Expect::Error(code) => reply["error"]["code"] == code,
            Expect::Result(method) => {
                let result = &reply["result"];
                match method {
                    "ping" => *result == json!({}),
                    "sampling/createMessage" => {
                        result["role"] == "assistant" && result["content"]["type"] == "text"
                    }
                    "elicitation/create" => result["action"] == "accept",
                    _ => result["roots"][0]["uri"] == ROOT_URI,
                }
            }
        };
        if !fits {
            let request = wire.carried_by.get(&id).cloned().unwrap_or_default();
            wire.problems.push(format!(
                "the answer {reply} does not fit the request {request}"
            ));
        }
    }

    /// A request from the client: held if it is one of this round's calls (answered
    /// together once all have come), else answered at once.
    pub(super) async fn request(&mut self, request: Value) -> Result<(), String> {
        let (round, tags) = {
            let wire = lock(&self.wire);
            (wire.round, wire.round_tags.clone())
        };
        let params = &request["params"];
        let tag = match request["method"].as_str() {
            Some("tools/call") => params["arguments"]["tag"].as_str().map(str::to_owned),
            Some("tools/list") => params["cursor"].as_str().map(str::to_owned),
            Some("ping") => Some(format!("ping-{round}")),
            _ => None,
        }
        .filter(|tag| tags.contains(tag) && !self.held.iter().any(|(t, _)| t == tag));
        let Some(tag) = tag else {
            self.untagged += 1;
            let key = format!("untagged-{round}-{}", self.untagged);
            return self.answer(&key, false, &request).await;
        };
        if let Some(token) = params["_meta"].get("progressToken") {
            lock(&self.wire).progress.insert(token.to_string(), (0, 0));
            // In tag order, not arrival order, so a seed picks the same calls.
            self.pending.push((tag.clone(), token.clone()));
            self.pending.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self.held.push((tag, request));
        if self.held.len() < tags.len() {
            return Ok(());
        }
        let mut held = std::mem::take(&mut self.held);
        held.sort_by(|a, b| a.0.cmp(&b.0));
        let mut order = Rng::new(self.seed ^ fnv(&format!("round-{round}")));
        for i in (1..held.len()).rev() {
            held.swap(i, order.below(i as u64 + 1) as usize);
        }
        for (tag, request) in held {
            self.answer(&tag, true, &request).await?;
        }
        Ok(())
    }

    /// Answer one request: a few extra messages, the (perhaps mutated) answer, the
    /// fallback, a few more.
    pub(super) async fn answer(
        &mut self,
        key: &str,
        tagged: bool,
        request: &Value,
    ) -> Result<(), String> {
        let mut rng = Rng::new(self.seed ^ fnv(key));
        let id = request["id"].clone();
        let fallback = json!({"jsonrpc":"2.0","id":id,"error":{
            "code":FALLBACK,"message":"the answer before this one was unreadable"}});
        if lock(&self.wire).quiet {
            return self.send(fallback, false).await;
        }
        let token = request["params"]["_meta"].get("progressToken").cloned();
        for _ in 0..rng.below(3) {
            self.extra(&mut rng, &id).await?;
        }
        let mut answer = json!({"jsonrpc":"2.0","id":id});
        let method = request["method"].as_str().unwrap_or_default();
        let last_page = request["params"]["cursor"] == "page-2";
        match (rng.below(8), method) {
            (0, _) => answer["error"] = pick(&mut rng, server_errors()),
            (1, _) => {
                let mut any = tool_results();
                any.extend(tool_lists());
                any.push(json!({}));
                answer["result"] = pick(&mut rng, any);
            }
            (_, "tools/call") => answer["result"] = pick(&mut rng, tool_results()),
            (_, "tools/list") if last_page => answer["result"] = tool_lists()[1].clone(),
            (_, "tools/list") => answer["result"] = pick(&mut rng, tool_lists()),
            (_, "ping") => answer["result"] = json!({}),
            _ => answer["error"] = json!({"code":-32601,"message":"no such method"}),
        }
        let mutated = rng.below(3) != 0;
        if mutated {
            for _ in 0..=rng.below(2) {
                mutate(&mut rng, &mut answer);
            }
        }
        if tagged {
            lock(&self.wire).answered.insert(
                key.to_owned(),
                Answer {
                    id: id.clone(),
                    token: token.clone(),
                    sent: answer.clone(),
                    mutated,
                },
            );
        }
        self.send(answer, mutated).await?;
        self.send(fallback, false).await?;
        if let Some(token) = token {
            self.pending.retain(|(_, t)| *t != token);
            self.finished.push(token);
        }
        for _ in 0..rng.below(3) {
            self.extra(&mut rng, &id).await?;
        }
        Ok(())
    }

    /// A notification or a request of the server's own, perhaps mutated.
    pub(super) async fn extra(&mut self, rng: &mut Rng, call: &Value) -> Result<(), String> {
        let mutated = rng.below(3) != 0;
        let choice = rng.below(10);
        let mut message;
        // Progress for a call that waits for its answer; progress no call will take.
        let mut waiting = None;
        let mut nobody = false;
        let mut expect = None;
        match choice {
            0..=2 => {
                let token = match rng.below(4) {
                    0 | 1 if !self.pending.is_empty() => {
                        let token = self.pending[rng.below(self.pending.len() as u64) as usize]
                            .1
                            .clone();
                        waiting = Some(token.to_string());
                        token
                    }
                    2 if !self.finished.is_empty() => {
                        self.finished[rng.below(self.finished.len() as u64) as usize].clone()
                    }
                    _ => {
                        nobody = true;
                        if rng.below(2) == 0 {
                            json!(format!("nobody-{}", rng.below(1000)))
                        } else {
                            json!(1_000_000_000_000_u64 + rng.below(1000))
                        }
                    }
                };
                message = server_notifications(&token, call)[0].clone();
                message["params"]["progress"] = json!(rng.below(100));
            }
            3 => message = server_notifications(&Value::Null, call)[1].clone(),
            4 => message = server_notifications(&Value::Null, call)[2].clone(),
            5 => {
                let named = if rng.below(2) == 0 {
                    call.clone()
                } else {
                    self.last_request.clone()
                };
                message = server_notifications(&Value::Null, &named)[3].clone();
            }
            _ => {
                self.requests += 1;
                let n = self.requests;
                let id = if n.is_multiple_of(2) {
                    json!(format!("srv-{n}"))
                } else {
                    json!(1_000_000 + n)
                };
                let kind = rng.below(5) as usize;
                message = server_requests(&id)[kind].clone();
                expect = Some(match kind {
                    0 => Expect::Result("ping"),
                    1 => Expect::Result("sampling/createMessage"),
                    2 => Expect::Result("elicitation/create"),
                    3 => Expect::Result("roots/list"),
                    _ => Expect::Error(-32601),
                });
                self.last_request = id;
            }
        }
        if mutated {
            for _ in 0..=rng.below(2) {
                mutate(rng, &mut message);
            }
        }
        {
            let mut wire = lock(&self.wire);
            if let Some(token) = waiting {
                let bounds = wire.progress.entry(token).or_default();
                bounds.1 += 1;
                if !mutated {
                    bounds.0 += 1;
                }
            }
            if !mutated {
                let clean = match choice {
                    0..=2 if nobody => Some("notifications/progress"),
                    3 => Some("notifications/message"),
                    4 => {
                        wire.list_changed_clean = true;
                        None
                    }
                    5 => Some("notifications/cancelled"),
                    _ => None,
                };
                if let Some(method) = clean {
                    *wire.notes_clean.entry(method.to_owned()).or_default() += 1;
                }
                if let Some(expect) = expect {
                    wire.expect.insert(message["id"].to_string(), expect);
                }
            }
        }
        self.send(message, mutated).await
    }

    /// Send one message, keeping the books: answers owed, cancellations, notifications.
    /// It is written in a layout some peer writes, chosen by the message itself, so a
    /// seed replays the same bytes whatever order the calls arrive in.
    pub(super) async fn send(&mut self, message: Value, mutated: bool) -> Result<(), String> {
        let mut rng = Rng::new(self.seed ^ fnv(&message.to_string()));
        let text = Layout::random(&mut rng, self.peer.newlines_allowed()).write(&message);
        {
            let mut wire = lock(&self.wire);
            if mutated {
                wire.hostile += 1;
            }
            if let Some(id) = answered_id(&message) {
                wire.tally.owe(id.clone(), false);
                wire.owed += 1;
                wire.due.entry(id.clone()).or_default().0 += 1;
                if !wire.excused.contains(&id) {
                    wire.open.insert(id.clone());
                }
                wire.carried_by.insert(id, text.clone());
            }
            if let Some(id) = cancelled_id(&message) {
                wire.expect.remove(&id);
                wire.open.remove(&id);
                wire.excused.insert(id.clone());
                wire.tally.excuse(id);
            }
            if message.get("id").is_none()
                && let Some(method) = message["method"].as_str()
            {
                *wire.notes_sent.entry(method.to_owned()).or_default() += 1;
            }
            wire.digest = (wire.digest ^ fnv(&text)).wrapping_mul(0x0100_0000_01b3);
            wire.log.push(text.clone());
        }
        self.peer.try_send_text(&text).await
    }
}
