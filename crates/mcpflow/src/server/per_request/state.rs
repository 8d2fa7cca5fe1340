//! `requestState`: the answers of earlier rounds, bound to the request they belong to
//! (method, tool/prompt name or resource URI, a digest of the arguments), to the server
//! that issued it (its name) and to the principal it was issued to, and sealed with
//! HMAC-SHA256, so a client can neither alter them nor replay them on another request,
//! another server or as someone else.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpflow_protocol::ErrorObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a `requestState` stays valid after it was issued.
const STATE_TTL_MS: u64 = 60 * 60 * 1000;

/// The secrets `requestState` is sealed with: a ring whose first key seals and every key
/// opens. By default each server process draws one random key; give several instances
/// behind one endpoint the same ring
/// ([`ServerBuilder::state_key`](crate::server::ServerBuilder::state_key)) so that a
/// round may land on any of them.
///
/// To rotate without failing a request in flight, first give every instance the new
/// secret as one that only opens ([`accepting`](Self::accepting)), then make it the one
/// that seals, and drop the old one once the states it sealed have expired (an hour).
///
/// ```
/// use mcpflow::server::StateKey;
/// // Every instance: the current secret seals, the previous one still opens.
/// let key = StateKey::from_bytes(b"current secret").accepting(b"previous secret");
/// assert_eq!(key.len(), 2);
/// ```
#[derive(Clone)]
pub struct StateKey(Arc<[[u8; 32]]>);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key derived from `secret` (any length; hashed to 32 bytes).
    pub fn from_bytes(secret: &[u8]) -> StateKey {
        StateKey(Arc::new([derive(secret)]))
    }

    /// The same ring, also opening state sealed with `secret` (a key being rotated in
    /// or out); the first key still seals.
    #[must_use]
    pub fn accepting(self, secret: &[u8]) -> StateKey {
        let mut keys = self.0.to_vec();
        keys.push(derive(secret));
        StateKey(keys.into())
    }

    /// How many keys open state (at least one).
    #[allow(clippy::len_without_is_empty)] // a ring is never empty
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A random key, from the operating system.
    pub fn random() -> StateKey {
        let mut bytes = [0u8; 32];
        if getrandom::fill(&mut bytes).is_err() {
            // Without OS randomness the state is still bound to this process's clock
            // and address space; logged because it weakens the protection.
            tracing::warn!("no OS randomness for the requestState key; using a weaker one");
            let seed = format!("{:?}{:p}", SystemTime::now(), &bytes);
            return StateKey::from_bytes(seed.as_bytes());
        }
        StateKey(Arc::new([bytes]))
    }

    /// The MAC under the sealing key.
    fn mac(&self, data: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.0[0], data)
    }

    /// Whether `tag` is the MAC of `data` under any key of the ring.
    fn verifies(&self, data: &[u8], tag: &[u8]) -> bool {
        self.0
            .iter()
            .any(|key| constant_time_eq(tag, &hmac_sha256(key, data)))
    }

    /// Seal `answers` for the request `binding` describes; `once`, a random token
    /// naming the state, makes it single-use.
    pub(crate) fn seal(
        &self,
        binding: &Binding,
        answers: &BTreeMap<String, Value>,
        once: Option<String>,
    ) -> String {
        let payload = Payload {
            binding: binding.clone(),
            issued_ms: now_ms(),
            answers: answers.clone(),
            once,
        };
        let json = serde_json::to_vec(&payload).unwrap_or_default();
        let body = URL_SAFE_NO_PAD.encode(&json);
        let tag = URL_SAFE_NO_PAD.encode(self.mac(body.as_bytes()));
        format!("{body}.{tag}")
    }

    /// The answers sealed in `state`, if it verifies, is fresh and belongs to `binding`,
    /// with its single-use token if it has one.
    pub(crate) fn open(&self, state: &str, binding: &Binding) -> Result<Opened, ErrorObject> {
        let refuse =
            |why: &str| ErrorObject::invalid_params(format!("invalid requestState: {why}"));
        let (body, tag) = state.split_once('.').ok_or_else(|| refuse("malformed"))?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| refuse("malformed"))?;
        if !self.verifies(body.as_bytes(), &tag) {
            return Err(refuse("integrity check failed"));
        }
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| refuse("malformed"))?;
        let payload: Payload = serde_json::from_slice(&json).map_err(|_| refuse("malformed"))?;
        if payload.binding != *binding {
            return Err(refuse("it belongs to another request"));
        }
        if now_ms().saturating_sub(payload.issued_ms) > STATE_TTL_MS {
            return Err(refuse("expired; start the request again without it"));
        }
        Ok(Opened {
            answers: payload.answers,
            once: payload.once,
        })
    }
}

/// What an opened state holds.
pub(crate) struct Opened {
    pub(crate) answers: BTreeMap<String, Value>,
    /// The token that makes it single-use.
    pub(crate) once: Option<String>,
}

/// How long a single-use token is remembered: as long as its state is valid.
pub(crate) const STATE_TTL: std::time::Duration = std::time::Duration::from_millis(STATE_TTL_MS);

/// A secret as a 32-byte key.
fn derive(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// The request a state belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    #[serde(rename = "m")]
    method: String,
    #[serde(rename = "t")]
    target: String,
    /// SHA-256 of the arguments in canonical form (keys sorted), hex.
    #[serde(rename = "d")]
    digest: String,
    /// The issuing server's name: another server sharing the key refuses it.
    #[serde(rename = "s")]
    audience: String,
    /// [`Principal::owner_key`](crate::server::Principal::owner_key) of whom it was
    /// issued to, with authorization on.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
}

/// Who a state is for: the server that issues it and the principal it is issued to.
pub(crate) struct Audience<'a> {
    pub(crate) server: &'a str,
    pub(crate) principal: Option<String>,
}

impl Binding {
    pub(crate) fn new(
        method: &str,
        target: String,
        arguments: Option<&Value>,
        audience: Audience<'_>,
    ) -> Binding {
        let mut canonical = Vec::new();
        write_canonical(arguments.unwrap_or(&Value::Null), &mut canonical);
        let digest = Sha256::digest(&canonical)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Binding {
            method: method.to_owned(),
            target,
            digest,
            audience: audience.server.to_owned(),
            principal: audience.principal,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "b")]
    binding: Binding,
    #[serde(rename = "i")]
    issued_ms: u64,
    #[serde(rename = "a")]
    answers: BTreeMap<String, Value>,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    once: Option<String>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// JSON with object keys sorted at every level, whatever order the map keeps.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// HMAC-SHA256 (RFC 2104) of `data` under `key` (at most one block long).
fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..key.len().min(64)].copy_from_slice(&key[..key.len().min(64)]);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    fn audience<'a>(server: &'a str, principal: Option<&str>) -> Audience<'a> {
        Audience {
            server,
            principal: principal.map(str::to_owned),
        }
    }

    fn bind(target: &str, args: &Value) -> Binding {
        Binding::new(
            "tools/call",
            target.into(),
            Some(args),
            audience("srv", None),
        )
    }

    #[test]
    fn state_opens_only_unaltered_and_for_its_request() {
        let key = StateKey::from_bytes(b"k");
        let args = serde_json::json!({"b": 1, "a": [true]});
        let binding = bind("t", &args);
        let mut answers = BTreeMap::new();
        answers.insert("x".to_owned(), serde_json::json!({"action": "decline"}));
        let state = key.seal(&binding, &answers, None);
        assert_eq!(key.open(&state, &binding).expect("opens").answers, answers);
        let reordered = serde_json::json!({"a": [true], "b": 1});
        let same = bind("t", &reordered);
        assert!(key.open(&state, &same).is_ok(), "key order does not matter");
        let other = bind("u", &args);
        assert!(key.open(&state, &other).is_err());
        let elsewhere = Binding::new(
            "tools/call",
            "t".into(),
            Some(&args),
            audience("other", None),
        );
        assert!(
            key.open(&state, &elsewhere).is_err(),
            "another server's state"
        );
        let someone = Binding::new(
            "tools/call",
            "t".into(),
            Some(&args),
            audience("srv", Some("ann")),
        );
        assert!(
            key.open(&state, &someone).is_err(),
            "issued to nobody, used by ann"
        );
        let mut tampered = state.clone();
        tampered.insert(3, 'A');
        assert!(key.open(&tampered, &binding).is_err());
        assert!(StateKey::from_bytes(b"j").open(&state, &binding).is_err());
    }

    #[test]
    fn a_ring_seals_with_its_first_key_and_opens_with_any() {
        let args = serde_json::json!({});
        let binding = bind("t", &args);
        let answers = BTreeMap::new();
        let old = StateKey::from_bytes(b"old");
        let rotating = StateKey::from_bytes(b"new").accepting(b"old");
        let sealed_old = old.seal(&binding, &answers, None);
        let sealed_new = rotating.seal(&binding, &answers, None);
        assert!(
            rotating.open(&sealed_old, &binding).is_ok(),
            "the old key still opens"
        );
        assert!(rotating.open(&sealed_new, &binding).is_ok());
        assert!(
            old.open(&sealed_new, &binding).is_err(),
            "the new key seals"
        );
        let retired = StateKey::from_bytes(b"new");
        assert!(
            retired.open(&sealed_old, &binding).is_err(),
            "a dropped key opens nothing"
        );
        assert_eq!((old.len(), rotating.len()), (1, 2));
    }
}
