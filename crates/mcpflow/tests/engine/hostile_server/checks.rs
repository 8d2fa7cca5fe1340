//! How a call must have ended, given the answer the raw server sent it.

use super::*;

/// How a call ended, against the answer it was sent: `Ok` only from a result with the
/// call's id, and equal to that result read as `T`; `Codec` only for a result that does
/// not read as `T` (or, with `schema`, for output that may break the tool's
/// outputSchema, or for a response to the call that does not decode);
/// `InvalidToolOutput` only with `schema`; `Rejected` with
/// the error sent, or with the fallback only when the answer is no longer a well-formed
/// response to the call.
pub(super) fn check_answer<T: Serialize + DeserializeOwned + std::fmt::Debug>(
    got: Result<&T, &SessionError>,
    answer: &Answer,
    schema: bool,
) -> Result<(), String> {
    check_answer_of(got.map(Some), answer, schema)
}

pub(super) fn check_answer_of<T: Serialize + DeserializeOwned + std::fmt::Debug>(
    got: Result<Option<&T>, &SessionError>,
    answer: &Answer,
    schema: bool,
) -> Result<(), String> {
    let sent = &answer.sent;
    let same_id = sent.get("id") == Some(&answer.id);
    let expected = sent
        .get("result")
        .map(|result| serde_json::from_str::<T>(&result.to_string()));
    let type_name = std::any::type_name::<T>();
    match got {
        Ok(value) => {
            if !same_id {
                return Err("Ok from a response that does not carry the call's id".to_owned());
            }
            match expected {
                None => Err("Ok, but the answer has no result".to_owned()),
                Some(Err(e)) => Err(format!("Ok, but the result is not a {type_name}: {e}")),
                Some(Ok(expected)) => match value {
                    Some(value)
                        if serde_json::to_value(value).unwrap()
                            != serde_json::to_value(&expected).unwrap() =>
                    {
                        Err(format!("Ok, but the result reads as {expected:?}"))
                    }
                    _ => Ok(()),
                },
            }
        }
        Err(SessionError::Rejected { error, .. }) if i64::from(error.code.0) == FALLBACK => {
            if intact(sent, &answer.id) {
                Err(
                    "a well-formed response was passed over: the fallback ended the call"
                        .to_owned(),
                )
            } else {
                Ok(())
            }
        }
        Err(SessionError::Rejected { error, .. }) => {
            let code = sent["error"]["code"].as_i64();
            let message = &sent["error"]["message"];
            let message_fits = !message.is_string() || *message == error.message.as_str();
            if same_id && code == Some(i64::from(error.code.0)) && message_fits {
                Ok(())
            } else {
                Err("rejected with an error that was not sent".to_owned())
            }
        }
        // A response that does not decode, whose id could be read: its call ends at once.
        Err(SessionError::Codec { detail, .. }) if detail.contains("response is unreadable") => {
            let answers = sent.get("result").is_some() || sent.get("error").is_some();
            if intact(sent, &answer.id) {
                Err("a well-formed response was called unreadable".to_owned())
            } else if !same_id || !answers || sent.get("method").is_some() {
                Err("an unreadable response ended a call it does not answer".to_owned())
            } else {
                Ok(())
            }
        }
        Err(SessionError::Codec { detail, .. }) => match expected {
            _ if !same_id => Err("a codec error from a response with another id".to_owned()),
            Some(Err(_)) => Ok(()),
            Some(Ok(_)) if schema && detail.contains("outputSchema") => Ok(()),
            Some(Ok(_)) => Err(format!(
                "a codec error, but the result reads as a {type_name}"
            )),
            None => Err("a codec error, but the answer has no result".to_owned()),
        },
        // The tool list the client fetched declares an outputSchema the output breaks.
        Err(SessionError::InvalidToolOutput { .. }) => match expected {
            _ if !same_id => Err("an output error from a response with another id".to_owned()),
            Some(_) if schema => Ok(()),
            Some(_) => Err("an output error without a tool list to check against".to_owned()),
            None => Err("an output error, but the answer has no result".to_owned()),
        },
        Err(e) => Err(format!("an unclear error: {e}")),
    }
}

/// Whether `sent` is still a well-formed JSON-RPC response to `id`, with nothing the
/// envelope does not define, whatever its result says: the client must take it (the
/// fallback after it may not end the call).
pub(super) fn intact(sent: &Value, id: &Value) -> bool {
    let Some(members) = sent.as_object() else {
        return false;
    };
    if members.len() != 3 || sent["jsonrpc"] != "2.0" || members.get("id") != Some(id) {
        return false;
    }
    match (members.get("result"), members.get("error")) {
        (Some(_), None) => true,
        (None, Some(Value::Object(error))) => {
            error
                .get("code")
                .and_then(Value::as_i64)
                .is_some_and(|code| i32::try_from(code).is_ok())
                && error.get("message").is_some_and(Value::is_string)
                && error
                    .keys()
                    .all(|k| matches!(k.as_str(), "code" | "message" | "data"))
        }
        _ => false,
    }
}
